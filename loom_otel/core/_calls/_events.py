"""Span events whose attributes loom-otel built itself.

``Span.add_event`` of the OpenTelemetry SDK copies and checks every value of an event (about 9 us for
the 19 attributes of ``loom.reasoning.captured``). loom-otel's own events hold only strings, booleans,
integers and tuples of them, so on the SDK's span, and when no span limit could cut or drop a value,
the event is added as built; anything else goes through ``add_event``, which applies the limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from opentelemetry.sdk.trace import Event
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.trace import Span

from loom_otel.core._journal._records import AttributeValue

__all__ = ["add_event"]


def add_event(span: Span, name: str, attributes: Mapping[str, AttributeValue], timestamp: int | None = None) -> None:
    """``span.add_event(name, attributes, timestamp)``, without copying and checking ``attributes`` again
    where that would change nothing: their sequences must be tuples, and nothing may change them afterwards
    (the event is immutable as built)."""
    if getattr(type(span), "add_event", None) is SdkSpan.add_event:  # the SDK's span (not a proxy of one)
        limits = getattr(span, "_limits", None)
        add = getattr(span, "_add_event", None)
        if (
            limits is not None
            and add is not None
            and limits.max_attribute_length is None
            and (limits.max_event_attributes is None or len(attributes) <= limits.max_event_attributes)
        ):
            add(Event(name, MappingProxyType(attributes), timestamp))  # ``_add_event``: nothing on an ended span
            return
    span.add_event(name, attributes, timestamp)
