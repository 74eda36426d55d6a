"""The tracer providers loom-otel's spans go to: the global one, and each one an instrumentor was given
(``instrument(tracer_provider=...)``), held weakly. At exit the chained exporter flushes all of them
before it resends what is still owed: a span still queued in a provider that was not flushed would
deliver its records a second time."""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any

from opentelemetry import trace

__all__ = ["span_providers", "tracer_provider_given"]

_lock = threading.Lock()
_given: weakref.WeakSet[Any] = weakref.WeakSet()


def tracer_provider_given(provider: Any) -> None:
    """An instrumentor was given ``provider`` (``None``: it uses the global one, nothing to remember)."""
    if provider is None:
        return
    with _lock, contextlib.suppress(TypeError):  # no weak references: the global flush still runs
        _given.add(provider)


def span_providers() -> list[Any]:
    """The global tracer provider first, then each given one not already named."""
    providers: list[Any] = [trace.get_tracer_provider()]
    with _lock:
        given = list(_given)
    providers.extend(p for p in given if all(p is not q for q in providers))
    return providers
