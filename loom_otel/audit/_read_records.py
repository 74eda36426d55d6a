"""The viewer's ``read`` records as read back from a journal: ``read_record`` of a parsed record (its chain
hash checked, for its standing), ``parse_read_line`` of one line (what the capture index keeps of it)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from loom_otel.audit._captures import sound_hash
from loom_otel.core.journal import attributes as attr

__all__ = ["ReadRecord", "parse_read_line", "read_record"]


@dataclass(frozen=True, slots=True)
class ReadRecord:
    """One ``read`` record of a journal."""

    time: int
    reader: str
    tenant: str | None
    execution_id: str
    ref: str
    digest: str
    outcome: str
    origin: str
    seq: int
    record_hash: str = ""
    """The record's chain hash when it recomputes from the record as read, else ``""`` (``_standing``)."""


def read_record(record: Mapping[str, object], *, hashed: bool = True) -> ReadRecord | None:
    """A journal record as a ``ReadRecord`` (``None``: not a ``read`` record); ``hashed=False``: its chain
    hash is not recomputed (``record_hash`` stays ``""``)."""
    attributes = record.get("attributes")
    if record.get("type") != attr.RECORD_READ or not isinstance(attributes, dict):
        return None
    tenant = attributes.get(attr.TENANT)
    return ReadRecord(
        time=_number(record.get("time")),
        reader=str(attributes.get(attr.READ_READER, "")),
        tenant=None if tenant is None else str(tenant),
        execution_id=str(attributes.get(attr.EXECUTION_ID, "")),
        ref=str(attributes.get(attr.READ_REF, "")),
        digest=str(attributes.get(attr.READ_DIGEST, "")),
        outcome=str(attributes.get(attr.READ_OUTCOME, "")),
        origin=str(record.get("origin", "")),
        seq=_number(record.get("seq")),
        record_hash=sound_hash(record) if hashed else "",
    )


def parse_read_line(line: bytes) -> ReadRecord | None:
    """One journal line as a ``ReadRecord`` without its chain hash (``None``: no well-formed ``read`` record)."""
    if b'"read"' not in line:  # cheap skip for captures, checkpoints and other record types
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return read_record(record, hashed=False) if isinstance(record, dict) else None


def _number(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
