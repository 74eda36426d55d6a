"""Every loom-otel instrumentor the installed distribution registers, and a clean-up for tests that run
``opentelemetry-instrument``'s loader or its post-instrument hook in process: those instrument every
registered loom-otel instrumentor, and one left instrumented makes the next test's ``instrument()`` a
no-op on the same worker."""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import Any

from loom_otel.testing import reset_runtime

__all__ = ["loom_instrumentors", "only_loom_instrumentations", "uninstrument_every_loom_instrumentor"]


def _registered(loom: bool) -> list[EntryPoint]:
    """The ``opentelemetry_instrumentor`` entry points of loom-otel (``loom``), or of every other package."""
    return [e for e in entry_points(group="opentelemetry_instrumentor") if e.value.startswith("loom_otel.") == loom]


def loom_instrumentors() -> list[Any]:
    """One instance (the singleton) of each ``opentelemetry_instrumentor`` entry point of loom-otel."""
    return [e.load()() for e in _registered(loom=True)]


def only_loom_instrumentations(*disabled: str) -> dict[str, str]:
    """The environment under which ``opentelemetry-instrument`` instruments loom-otel's instrumentors only
    (and not ``disabled`` ones): the test venv also holds the other GenAI instrumentations (the ``peers``
    extra), which import every SDK at start-up, seconds per subprocess, in tests whose subject is not them."""
    others = {e.name for e in _registered(loom=False)}
    return {"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": ",".join(sorted(others | set(disabled)))}


def uninstrument_every_loom_instrumentor() -> None:
    for instrumentor in loom_instrumentors():
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()
    reset_runtime()
