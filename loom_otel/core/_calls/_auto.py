"""``opentelemetry-instrument``'s dependency check, made loud: it skips every instrumentor of a
distribution none of whose ``instruments-any`` SDKs is in range, with a log line only. This hook (the
``opentelemetry_post_instrument`` entry point, run after the instrumentors whatever they did)
instruments a loom-otel instrumentor it skipped, so that ``ReasoningInstrumentor._instrument`` decides
what an SDK outside the range gets: model calls that fail closed with a store configured, a warning
without one."""

from __future__ import annotations

import os
from importlib.metadata import EntryPoint, entry_points
from typing import Final

from loom_otel.core._runtime._callbacks import shielded

__all__ = ["instrument_skipped"]

_OURS: Final = "loom_otel."
_DISABLED: Final = "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"


def instrument_skipped() -> None:
    """Instrument each loom-otel instrumentor the loader left uninstrumented (one named in
    ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS``, or all with ``*``, stays off)."""
    disabled = {name.strip() for name in os.environ.get(_DISABLED, "").split(",")}
    if "*" in disabled:
        return
    for entry_point in entry_points(group="opentelemetry_instrumentor"):
        if entry_point.value.startswith(_OURS) and entry_point.name not in disabled:
            shielded(f"instrumenting {entry_point.name}", _instrument, entry_point)


def _instrument(entry_point: EntryPoint) -> None:
    instrumentor = entry_point.load()()
    if not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument()
