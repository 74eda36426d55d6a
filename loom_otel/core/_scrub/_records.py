"""Scrubbing a whole span or log record: every string it carries, in place.

A span: its name, attributes, events (name and attributes: exception events included), links'
attributes and status description. A log record: its body (a string, bytes, or maps and lists of
them), attributes and event name. Each value goes through the per-value rules, then all of the
record's texts through the window pass as one text (``_values.scrub_texts``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from opentelemetry.trace import Status

from loom_otel.core._scrub._values import Text, scrub_any, scrub_attributes, scrub_texts

__all__ = ["scrub_log_record", "scrub_span"]

_OWN_SCOPE: Final = "loom_otel"

_Setter = Callable[[Text], None]


def _read(holder: Any, name: str) -> dict[str, Any]:
    """A snapshot of ``holder.<name>`` (a span's, event's, link's or log record's attributes)."""
    attributes = getattr(holder, name, None)
    if not attributes:
        return {}
    inner = getattr(attributes, "_dict", None)
    lock = getattr(attributes, "_lock", None)
    if isinstance(inner, dict) and lock is not None:
        with lock:  # a BoundedAttributes: its dict read at once (its item view is a Python call per item)
            return dict(inner)
    return dict(attributes)


def _write(holder: Any, name: str, changed: Mapping[str, Any]) -> None:
    """Put ``changed`` into ``holder.<name>``: in place for a BoundedAttributes (shared with the span's
    readable copies), else as a new map."""
    attributes = getattr(holder, name, None)
    inner = getattr(attributes, "_dict", None)
    lock = getattr(attributes, "_lock", None)
    if isinstance(inner, dict) and lock is not None:
        with lock:
            inner.update(changed)
    else:
        setattr(holder, name, {**(attributes or {}), **changed})


class _Texts:
    """The texts of one record, in order, each with how to put a new one in its place."""

    __slots__ = ("setters", "texts")

    def __init__(self) -> None:
        self.texts: list[Text] = []
        self.setters: list[_Setter] = []

    def add(self, text: Text, setter: _Setter) -> None:
        if text:
            self.texts.append(text)
            self.setters.append(setter)

    def extend(self, other: _Texts) -> None:
        self.texts += other.texts
        self.setters += other.setters

    def attributes(self, holder: Any, name: str, attributes: Mapping[str, Any]) -> None:
        for key, value in attributes.items():
            if isinstance(value, str | bytes):
                self.add(value, _attribute_setter(holder, name, key))
            elif isinstance(value, tuple | list):
                for index, item in enumerate(value):
                    if isinstance(item, str | bytes):
                        self.add(item, _item_setter(holder, name, key, index))

    def apply(self) -> None:
        scrubbed = scrub_texts(self.texts)
        if scrubbed is None:
            return
        for old, new, setter in zip(self.texts, scrubbed, self.setters, strict=True):
            if new is not old:
                setter(new)


def _attribute_setter(holder: Any, name: str, key: str) -> _Setter:
    return lambda new: _write(holder, name, {key: new})


def _item_setter(holder: Any, name: str, key: str, index: int) -> _Setter:
    def put(new: Text) -> None:
        items = list(_read(holder, name)[key])
        items[index] = new
        _write(holder, name, {key: tuple(items)})

    return put


def _attributes(holder: Any, name: str, trace_id: int | None, texts: _Texts) -> None:
    current = _read(holder, name)
    if not current:
        return
    changed = scrub_attributes(current, trace_id)
    if changed is not None:
        _write(holder, name, changed)
        current.update(changed)
    texts.attributes(holder, name, current)


def _named(holder: Any, trace_id: int | None, texts: _Texts) -> None:
    name = getattr(holder, "_name", None)
    if isinstance(name, str) and name:
        new = scrub_any(name, trace_id)
        if new is not name:
            holder._name = new
        texts.add(new, lambda text: setattr(holder, "_name", text))


def scrub_span(span: Any) -> None:
    """Rewrite every string ``span`` carries (a span of loom-otel's own carries references only)."""
    scope = getattr(span, "instrumentation_scope", None)
    if scope is not None and scope.name.startswith(_OWN_SCOPE):
        return
    context = getattr(span, "context", None)
    trace_id = context.trace_id if context is not None else None
    texts, names = _Texts(), _Texts()
    _named(span, trace_id, names)
    _attributes(span, "_attributes", trace_id, texts)
    for event in getattr(span, "_events", None) or ():  # their values in a row: stream deltas join up
        _named(event, trace_id, names)
        _attributes(event, "_attributes", trace_id, texts)
    for link in getattr(span, "_links", None) or ():
        _attributes(link, "_attributes", trace_id, texts)
    status = getattr(span, "_status", None)
    description = getattr(status, "description", None)
    if isinstance(description, str) and description:

        def describe(text: Text) -> None:
            span._status = Status(span._status.status_code, str(text))

        new = scrub_any(description, trace_id)
        if new is not description:
            describe(new)
        texts.add(new, describe)
    texts.extend(names)
    texts.apply()


def _strings(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Text]]:
    """The strings and bytes in a log body, each with its path (keys and indexes)."""
    if isinstance(value, str | bytes):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, tuple | list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def _replaced(value: Any, path: tuple[Any, ...], new: Text) -> Any:
    """A copy of ``value`` with what is at ``path`` replaced by ``new``."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, Mapping):
        return {**value, head: _replaced(value[head], rest, new)}
    items = list(value)
    items[head] = _replaced(items[head], rest, new)
    return tuple(items) if isinstance(value, tuple) else items


def scrub_log_record(log_data: Any) -> None:
    """Rewrite every string a log record carries (``log_data``: the SDK's record or its wrapper)."""
    record = getattr(log_data, "log_record", log_data)
    trace_id = getattr(record, "trace_id", None)
    texts = _Texts()
    body = getattr(record, "body", None)
    if body is not None:
        record.body = scrub_any(body, trace_id)

        def body_setter(path: tuple[Any, ...]) -> _Setter:
            return lambda new: setattr(record, "body", _replaced(record.body, path, new))

        for path, text in _strings(record.body):
            texts.add(text, body_setter(path))
    _attributes(record, "attributes", trace_id, texts)
    event_name = getattr(record, "event_name", None)
    if isinstance(event_name, str) and event_name:
        texts.add(event_name, lambda text: setattr(record, "event_name", text))
    texts.apply()
