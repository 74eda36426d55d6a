"""Scrubbing a whole span or log record: every string it carries, in place.

A span: its name, attributes, events (name and attributes: exception events included), links'
attributes and status description. A log record: its body (a string, bytes, or maps and lists of
them), attributes and event name. Each value goes through the per-value rules, then all of the
record's texts through the window pass as one text (``_values.scrub_texts``).

The log records of one span are exported one by one, as they come: a thought split over several of them
(stream deltas, one record each) is found because each record is read after the last ``_TAIL``
characters the span's earlier records carried (``_Tails``: the newest ``_MAX_SPANS`` spans, dropped at
the span's end). A run that continues into a record is removed from it; what earlier records already
exported stays, at most ``MIN_RUN - 1`` letters and digits of the thought (README).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from opentelemetry.trace import Status

from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._scrub._values import Text, scrub_any, scrub_attributes, scrub_texts

__all__ = ["is_own", "scrub_log_record", "scrub_span"]

_OWN_SCOPE: Final = "loom_otel"
_TAIL: Final = 512
"""Characters of a span's earlier log records each of its records is read after (several runs' worth)."""
_MAX_SPANS: Final = 1024

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


_Place = _Setter | tuple[Any, str, str, int | None]
"""Where a text goes back: a setter, or (holder, attribute map name, key, index in a sequence or
``None``); a tuple costs less to make for every attribute of every span, and most are never put back."""


class _Texts:
    """The texts of one record, in order, each with its place."""

    __slots__ = ("places", "texts")

    def __init__(self) -> None:
        self.texts: list[Text] = []
        self.places: list[_Place] = []

    def add(self, text: Text, place: _Place) -> None:
        if text:
            self.texts.append(text)
            self.places.append(place)

    def extend(self, other: _Texts) -> None:
        self.texts += other.texts
        self.places += other.places

    def attributes(self, holder: Any, name: str, attributes: Mapping[str, Any]) -> None:
        texts, places = self.texts, self.places
        for key, value in attributes.items():
            if isinstance(value, str | bytes):
                if value:
                    texts.append(value)
                    places.append((holder, name, key, None))
            elif isinstance(value, tuple | list):
                for index, item in enumerate(value):
                    if isinstance(item, str | bytes) and item:
                        texts.append(item)
                        places.append((holder, name, key, index))

    def apply(self, before: str = "") -> None:
        """Scrub the texts and put back the changed ones; ``before``: text read first, never put back."""
        scrubbed = scrub_texts([before, *self.texts] if before else self.texts)
        if scrubbed is None:
            return
        if before:
            scrubbed = scrubbed[1:]
        for old, new, place in zip(self.texts, scrubbed, self.places, strict=True):
            if new is old:
                continue
            if isinstance(place, tuple):
                _put(*place, new)
            else:
                place(new)


def _put(holder: Any, name: str, key: str, index: int | None, new: Text) -> None:
    """Put ``new`` at ``key`` (item ``index`` of a sequence) of ``holder.<name>``."""
    if index is None:
        _write(holder, name, {key: new})
        return
    items = list(_read(holder, name)[key])
    items[index] = new
    _write(holder, name, {key: tuple(items)})


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


class _Tails:
    """The last ``_TAIL`` characters of the texts each recent span's log records carried, as written."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tails: OrderedDict[tuple[int, int], str] = OrderedDict()

    def swap(self, key: tuple[int, int], texts: list[Text]) -> str:
        """The span's tail so far; ``texts`` (a new record's) are added to it."""
        added = "".join(t if isinstance(t, str) else t.decode("utf-8", "replace") for t in texts)
        with self._lock:
            before = self._tails.pop(key, "")
            self._tails[key] = (before + added)[-_TAIL:]
            while len(self._tails) > _MAX_SPANS:
                self._tails.popitem(last=False)
        return before

    def drop(self, key: tuple[int, int]) -> None:
        if self._tails:
            with self._lock:
                self._tails.pop(key, None)


_tails: Final = _Tails()


def _chained(event: Any) -> bool:
    """A journal record's event (capture, checkpoint, read, tombstone: it carries ``loom.audit.hash``):
    references, digests and signatures of the chain only, never reasoning, and hashed, so a rewrite would
    make the record unprovable. Left as it is, on whatever span it travels."""
    attributes = getattr(event, "_attributes", None) or getattr(event, "attributes", None)
    return attributes is not None and attr.AUDIT_HASH in attributes


def is_own(span: Any) -> bool:
    """A span of loom-otel's own (references only: never rewritten)."""
    scope = getattr(span, "instrumentation_scope", None)
    return scope is not None and scope.name.startswith(_OWN_SCOPE)


def scrub_span(span: Any) -> None:
    """Rewrite every string ``span`` carries (a span of loom-otel's own carries references only)."""
    context = getattr(span, "context", None)
    trace_id = context.trace_id if context is not None else None
    if context is not None:
        _tails.drop((context.trace_id, context.span_id))  # the span ends: its log records are over
    if is_own(span):
        return
    texts, names = _Texts(), _Texts()
    _named(span, trace_id, names)
    _attributes(span, "_attributes", trace_id, texts)
    for event in getattr(span, "_events", None) or ():  # their values in a row: stream deltas join up
        if _chained(event):
            continue
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
    span_id = getattr(record, "span_id", None)
    before = _tails.swap((trace_id, span_id), list(texts.texts)) if trace_id and span_id else ""
    texts.apply(before)
