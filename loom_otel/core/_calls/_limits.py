"""Attribute length limits that cut ``loom.reasoning.captured`` events (the SDK's ``SpanLimits``).

The OpenTelemetry SDK shortens every event attribute value longer than the provider's
``max_attribute_length`` (``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``, or ``SpanLimits`` passed to a
``TracerProvider``; ``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT`` applies to span attributes, which
carry no chain data). A capture event carries refs of ``CAPTURE_VALUE_LENGTH`` characters and 64-character hashes: below
that limit every capture event is cut, and an event that was cut no longer matches its journal
record. The chained exporter sends such records again from the journal, intact. This module warns
once, at startup, when the limit is that low.
"""

from __future__ import annotations

from typing import Final

from opentelemetry import trace
from opentelemetry.sdk.trace import SpanLimits

from loom_otel.core._runtime._warnings import warn
from loom_otel.core.exceptions import LoomOtelWarning

__all__ = ["CAPTURE_VALUE_LENGTH", "attribute_length_limit", "warn_if_truncating"]

CAPTURE_VALUE_LENGTH: Final = 97
"""The longest fixed-size string of a capture event: a reasoning ref (32 hex, ``/``, 64 hex)."""

_warned = False


def attribute_length_limit(tracer_provider: object | None = None) -> int | None:
    """The attribute value length limit events of ``tracer_provider`` get (the global
    provider when ``None``); ``None`` when there is none. A provider that is not the SDK's (a
    proxy, a no-op) is judged by the environment, as an SDK provider built later would be."""
    provider = trace.get_tracer_provider() if tracer_provider is None else tracer_provider
    limits = getattr(provider, "_span_limits", None)  # the SDK ``TracerProvider``'s own
    if not isinstance(limits, SpanLimits):
        try:
            limits = SpanLimits()  # from OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT
        except ValueError:  # a malformed value: the SDK will say so when it builds its provider
            return None
    return limits.max_attribute_length


def warn_if_truncating(tracer_provider: object | None = None) -> bool:
    """``True`` (and one ``LoomOtelWarning`` per process) when the limit cuts every capture event.

    The instrumentor calls it at ``instrument()`` with its tracer provider, the chained exporter at
    construction. Never raises."""
    global _warned
    try:
        limit = attribute_length_limit(tracer_provider)
    except Exception:
        return False
    if limit is None or limit >= CAPTURE_VALUE_LENGTH:
        return False
    if not _warned:
        _warned = True
        warn(
            f"the attribute value length limit ({limit}; OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT or the tracer "
            "provider's SpanLimits) is below "
            f"{CAPTURE_VALUE_LENGTH}: every loom.reasoning.captured event is cut short in the trace. The "
            "chained exporter sends each record again, intact, from the audit journal; other exporters "
            "carry only the cut copies",
            LoomOtelWarning,
        )
    return True
