"""Span writes of values loom-otel built itself: its event, and the attributes a call ends with.

The OpenTelemetry SDK copies and checks every value it is given (``Span.add_event``: about 9 us for the
19 attributes of ``loom.reasoning.captured``; ``Span.set_attributes``: about 4 us for a call's last 10).
loom-otel's own values are only strings, booleans, integers and tuples of them, so on the SDK's span,
and when no span limit could cut or drop a value, they are written as built; anything else goes
through the SDK's method, which applies the limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.trace import Span

from loom_otel.core._evidence._attributes import AttributeValue

__all__ = ["add_event", "set_attributes"]


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


def set_attributes(span: Span, attributes: Mapping[str, AttributeValue]) -> None:
    """``span.set_attributes(attributes)``, without checking the values again where that would change
    nothing: their sequences must be tuples. On an ended span, or with a limit that could cut a value or
    drop an attribute, the SDK's method decides."""
    if getattr(type(span), "set_attributes", None) is SdkSpan.set_attributes:
        bounded = getattr(span, "_attributes", None)
        lock = getattr(span, "_lock", None)
        if (
            type(bounded) is BoundedAttributes
            and lock is not None
            and bounded.max_value_len is None
            and not getattr(bounded, "_immutable", True)
        ):
            with lock:
                if getattr(span, "_end_time", 0) is None and (
                    bounded.maxlen is None or len(bounded._dict) + len(attributes) <= bounded.maxlen
                ):
                    with bounded._lock:
                        bounded._dict.update(attributes)
                    return
    span.set_attributes(attributes)
