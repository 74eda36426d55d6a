"""The inner exporter the chained exporter forwards to, from ``LOOM_OTEL_CHAIN_INNER``: any exporter
registered in the ``opentelemetry_traces_exporter`` entry-point group (the names ``OTEL_TRACES_EXPORTER``
takes: ``otlp_proto_http``, ``otlp_proto_grpc``, ``console``, ``zipkin_json``, a vendor's...), or
``none``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from loom_otel.core import environment_variables as env
from loom_otel.core.exceptions import ReasoningConfigError
from loom_otel.core.runtime import refuse, under_zero_code

__all__ = [
    "NoneSpanExporter",
    "RefusedSpanExporter",
    "inner_choices",
    "inner_from_environment",
    "inner_name",
    "inner_or_refused",
]

GROUP: Final = "opentelemetry_traces_exporter"
DEFAULT_INNER: Final = "otlp_proto_http"
_NONE: Final = "none"
_SELF: Final = "loom_chain"
"""The chained exporter's own entry point: never its own inner exporter."""


def inner_choices() -> list[str]:
    """Every name ``LOOM_OTEL_CHAIN_INNER`` accepts here: the registered span exporters, and ``none``."""
    return [*sorted({e.name for e in entry_points(group=GROUP)} - {_SELF}), _NONE]


class NoneSpanExporter(SpanExporter):
    """``LOOM_OTEL_CHAIN_INNER=none``: keep the journal, send nothing (everything counts as delivered)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


class RefusedSpanExporter(SpanExporter):
    """An invalid ``LOOM_OTEL_CHAIN_INNER`` under zero code (``inner_or_refused``): sends nothing, every
    export fails; the journal keeps every record for ``loom-otel forward``."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        return None


def inner_or_refused() -> SpanExporter:
    """``inner_from_environment()``; under zero code (``opentelemetry-instrument``, which would catch the
    error and run the application without loom-otel) an invalid name is not raised but refused
    (``core._runtime._zero_code``): told in one line, and the loom-otel instrumentors make every model call raise
    it. The exporter then forwards nothing (a typo never sends spans somewhere else)."""
    try:
        return inner_from_environment()
    except ReasoningConfigError as error:
        if not under_zero_code():
            raise
        refuse(error)
        return RefusedSpanExporter()


def inner_name(name: str | None = None) -> str:
    """The inner exporter's name: ``name``, else ``LOOM_OTEL_CHAIN_INNER``, else OTLP/HTTP."""
    return (name or os.environ.get(env.LOOM_OTEL_CHAIN_INNER) or DEFAULT_INNER).strip()


def inner_from_environment(name: str | None = None) -> SpanExporter:
    """Build the inner exporter named by ``name``, else ``LOOM_OTEL_CHAIN_INNER``, else OTLP/HTTP: the
    span exporter registered under that name (built with no arguments, as ``OTEL_TRACES_EXPORTER``
    builds it; the OTLP exporters read the standard ``OTEL_EXPORTER_OTLP_*`` variables themselves).

    A name nothing registers (or ``loom_chain`` itself) is a ``ReasoningConfigError`` naming the
    variable, the value and the choices: a typo never sends the spans somewhere else.
    """
    choice = inner_name(name)
    if choice.lower() == _NONE:
        return NoneSpanExporter()
    found = [] if choice == _SELF else list(entry_points(group=GROUP, name=choice))
    if not found:
        raise ReasoningConfigError(
            f"{env.LOOM_OTEL_CHAIN_INNER}={choice!r} names no registered span exporter; "
            f"allowed: {', '.join(inner_choices())}"
        )
    exporter = found[0].load()()
    if not isinstance(exporter, SpanExporter):
        raise TypeError(f"{env.LOOM_OTEL_CHAIN_INNER}={choice!r} names {type(exporter).__name__}, not a SpanExporter")
    return exporter
