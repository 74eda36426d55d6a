"""Journal records <-> span events: the one mapping used by the chained exporter and by ``verify``.

A record travels as an event whose attributes are the record's ``attributes`` plus the chain fields
(``loom.audit.origin/seq/prev/hash``) and whose timestamp is the record's ``time``. The event name
says the record type (``loom.reasoning.captured`` = ``capture``, ``loom.audit.checkpoint`` =
``checkpoint``); any other type travels as ``loom.audit.record`` with ``loom.audit.type``. From such an
event the record, and so its hash, is rebuilt exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._evidence._attributes import AttributeValue

__all__ = [
    "CHAIN_KEYS",
    "RECORD_SPAN",
    "RECORD_VERSION",
    "event_for_record",
    "record_from_event",
]

RECORD_VERSION: Final = 1
RECORD_SPAN: Final = "loom.audit.record"
"""Name of the span that carries a record the span pipeline did not deliver (sent from the journal)."""

CHAIN_KEYS: Final = frozenset({attr.AUDIT_ORIGIN, attr.AUDIT_SEQ, attr.AUDIT_PREV, attr.AUDIT_HASH, attr.AUDIT_TYPE})

_EVENT_FOR_TYPE: Final[Mapping[str, str]] = {
    attr.RECORD_CAPTURE: attr.EVENT_CAPTURED,
    attr.RECORD_CHECKPOINT: attr.EVENT_CHECKPOINT,
    attr.RECORD_READ: attr.EVENT_READ,
}
_TYPE_FOR_EVENT: Final[Mapping[str, str]] = {v: k for k, v in _EVENT_FOR_TYPE.items()}


def event_for_record(record: Mapping[str, object]) -> tuple[str, dict[str, AttributeValue], int]:
    """``(event name, event attributes, timestamp)`` carrying ``record``; ``ValueError`` if malformed."""
    type_, attributes, time_ns = record.get("type"), record.get("attributes"), record.get("time")
    if not isinstance(type_, str) or not isinstance(attributes, dict) or not isinstance(time_ns, int):
        raise ValueError("not a journal record")
    values: dict[str, AttributeValue] = {}
    for key, value in attributes.items():
        values[str(key)] = tuple(value) if isinstance(value, list) else value
    values[attr.AUDIT_ORIGIN] = str(record["origin"])
    values[attr.AUDIT_SEQ] = _int(record["seq"])
    values[attr.AUDIT_PREV] = str(record["prev"])
    values[attr.AUDIT_HASH] = str(record["hash"])
    name = _EVENT_FOR_TYPE.get(type_)
    if name is None:
        name = RECORD_SPAN
        values[attr.AUDIT_TYPE] = type_
    return name, values, time_ns


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("not an integer")
    return value


def record_from_event(name: str, attributes: Mapping[str, object], time_ns: int) -> dict[str, object] | None:
    """The journal record an event carries, ``None`` when the event carries none (or is malformed)."""
    origin, seq = attributes.get(attr.AUDIT_ORIGIN), attributes.get(attr.AUDIT_SEQ)
    prev, digest = attributes.get(attr.AUDIT_PREV), attributes.get(attr.AUDIT_HASH)
    if not (isinstance(origin, str) and isinstance(prev, str) and isinstance(digest, str)):
        return None
    if isinstance(seq, bool) or not isinstance(seq, int):
        return None
    declared = attributes.get(attr.AUDIT_TYPE)
    type_ = declared if isinstance(declared, str) else _TYPE_FOR_EVENT.get(name)
    if type_ is None:
        return None
    body = {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in attributes.items() if k not in CHAIN_KEYS}
    return {
        "v": RECORD_VERSION,
        "origin": origin,
        "seq": seq,
        "prev": prev,
        "time": time_ns,
        "type": type_,
        "attributes": body,
        "hash": digest,
    }
