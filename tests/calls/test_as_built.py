"""loom-otel's own span writes: its event and a call's last attributes are written as built on the SDK's
span, and are exactly what ``Span.add_event`` / ``Span.set_attributes`` would have recorded (limits, ended
spans and other spans go through the SDK's method)."""

from __future__ import annotations

from typing import Any

import pytest
import wrapt
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loom_otel.core._calls._as_built import add_event, set_attributes
from loom_otel.core._evidence._attributes import AttributeValue

_ATTRIBUTES: dict[str, AttributeValue] = {
    "a.string": "x" * 40,
    "a.int": 7,
    "a.bool": True,
    "a.float": 0.5,
    "a.strings": ("r1", "r2"),
    "a.ints": (1, 2),
    "a.bools": (False,),
}


def _events(limits: SpanLimits | None, add: Any, attributes: dict[str, AttributeValue]) -> list[Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=limits)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    span = provider.get_tracer("t").start_span("s")
    add(span, "e", attributes, 123)
    span.end()
    add(span, "after", attributes, 124)  # on an ended span: nothing
    (finished,) = exporter.get_finished_spans()
    return [(e.name, e.timestamp, dict(e.attributes or {})) for e in finished.events]


def _sdk(span: Any, name: str, attributes: dict[str, AttributeValue], timestamp: int) -> None:
    span.add_event(name, attributes, timestamp)


@pytest.mark.parametrize(
    "limits",
    [None, SpanLimits(max_attribute_length=5), SpanLimits(max_event_attributes=3), SpanLimits(max_event_attributes=7)],
    ids=["default", "value-length", "too-many", "just-enough"],
)
def test_the_event_is_what_add_event_records(limits: SpanLimits | None) -> None:
    ours = _events(limits, add_event, dict(_ATTRIBUTES))
    assert ours == _events(limits, _sdk, dict(_ATTRIBUTES))
    assert [name for name, _, _ in ours] == ["e"]
    assert len(ours[0][2]) == min(7, limits.max_event_attributes or 7) if limits else 7


def test_the_event_cannot_be_changed() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    span = provider.get_tracer("t").start_span("s")
    add_event(span, "e", dict(_ATTRIBUTES))
    span.end()
    event = exporter.get_finished_spans()[0].events[0]
    with pytest.raises(TypeError):
        event.attributes["a.int"] = 8  # type: ignore[index]
    assert event.timestamp > 0  # no timestamp given: now


def test_a_span_proxy_goes_through_add_event() -> None:
    class Proxy(wrapt.ObjectProxy):  # type: ignore[misc]
        def add_event(self, name: str, attributes: Any = None, timestamp: int | None = None) -> None:
            calls.append(name)
            self.__wrapped__.add_event(name, attributes, timestamp)

    calls: list[str] = []
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    span = provider.get_tracer("t").start_span("s")
    add_event(Proxy(span), "e", dict(_ATTRIBUTES))
    span.end()
    assert calls == ["e"]
    assert dict(exporter.get_finished_spans()[0].events[0].attributes or {}) == _ATTRIBUTES


def _span_attributes(limits: SpanLimits | None, write: Any, *, end_first: bool = False) -> dict[str, Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=limits)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    span = provider.get_tracer("t").start_span("s", attributes={"a.int": 1, "start": "kept"})
    if end_first:
        span.end()
    write(span, dict(_ATTRIBUTES))
    if not end_first:
        span.end()
        write(span, {"after": "ended"})  # on an ended span: nothing
    (finished,) = exporter.get_finished_spans()
    return {"attributes": dict(finished.attributes or {}), "dropped": finished.dropped_attributes}


def _sdk_set(span: Any, attributes: dict[str, AttributeValue]) -> None:
    span.set_attributes(attributes)


@pytest.mark.parametrize(
    "limits",
    [None, SpanLimits(max_attribute_length=5), SpanLimits(max_span_attributes=4), SpanLimits(max_span_attributes=9)],
    ids=["default", "value-length", "too-many", "just-enough"],
)
@pytest.mark.parametrize("end_first", [False, True], ids=["open", "ended"])
def test_the_attributes_are_what_set_attributes_records(limits: SpanLimits | None, end_first: bool) -> None:
    ours = _span_attributes(limits, set_attributes, end_first=end_first)
    assert ours == _span_attributes(limits, _sdk_set, end_first=end_first)
    if not end_first and limits is None:
        assert ours["attributes"] == {"start": "kept", **_ATTRIBUTES}  # ``a.int`` replaced, nothing dropped
        assert "after" not in ours["attributes"]


def test_span_attributes_on_a_span_proxy_go_through_set_attributes() -> None:
    class Proxy(wrapt.ObjectProxy):  # type: ignore[misc]
        def set_attributes(self, attributes: Any) -> None:
            calls.append(dict(attributes))
            self.__wrapped__.set_attributes(attributes)

    calls: list[dict[str, Any]] = []
    assert _span_attributes(None, lambda span, attributes: set_attributes(Proxy(span), attributes))["attributes"] == {
        "start": "kept",
        **_ATTRIBUTES,
    }
    assert calls == [_ATTRIBUTES, {"after": "ended"}]


def test_span_attributes_are_not_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    import opentelemetry.attributes

    def checked(*args: Any) -> Any:
        raise AssertionError("the SDK checked loom-otel's values again")

    span = TracerProvider().get_tracer("t").start_span("s")
    for name in ("_clean_attribute_value", "_clean_attribute", "_clean_extended_attribute"):  # by SDK version
        if hasattr(opentelemetry.attributes, name):
            monkeypatch.setattr(opentelemetry.attributes, name, checked)
    set_attributes(span, dict(_ATTRIBUTES))
    assert dict(span.attributes or {}) == _ATTRIBUTES
    with pytest.raises(AssertionError):
        span.set_attributes({"x": 1})  # the patch is what the SDK's method calls
