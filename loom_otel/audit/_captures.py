"""Capture records from every source a reader accepts: a journal directory, a collector ``file``
exporter output (OTLP JSON lines), or OpenTelemetry SDK spans (``ReadableSpan``, e.g. the in-memory
exporter's output). All three carry the same fields (DESIGN "Capture"); this module turns each into
``CaptureRecord`` and nothing else: no store access, no text."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeAlias

from loom_otel.audit._otlp_json import raw_events
from loom_otel.core.journal import attributes as attr
from loom_otel.core.journal import canonical_json, chain_hash, iter_records, record_from_event

__all__ = [
    "CaptureRecord",
    "ReasoningSource",
    "SpanLike",
    "any_value",
    "event_hash",
    "iter_captures",
    "parse_collector_line",
    "parse_journal_line",
    "sound_hash",
]


class _EventLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def attributes(self) -> Mapping[str, Any] | None: ...

    @property
    def timestamp(self) -> int | None: ...


class SpanLike(Protocol):
    """What the reader needs of an OpenTelemetry SDK ``ReadableSpan``."""

    @property
    def events(self) -> Sequence[_EventLike]: ...


ReasoningSource: TypeAlias = "str | os.PathLike[str] | Iterable[SpanLike]"
"""A journal directory, a collector ``file`` exporter JSON file, or spans."""


@dataclass(frozen=True, slots=True)
class CaptureRecord:
    """One ``loom.reasoning.captured`` record: references, digests and sizes of one model call's parts."""

    execution_id: str
    step_id: str
    attempt: int
    tenant: str | None
    provider: str
    request_model: str
    response_model: str
    kinds: tuple[str, ...]
    refs: tuple[str, ...]
    digests: tuple[str, ...]
    sizes: tuple[int, ...]
    omitted: tuple[bool, ...]
    origin: str
    seq: int
    time: int
    layout: tuple[str, ...] = ()
    """``loom.reasoning.layout``: reasoning parts, text blocks and tool calls in vendor order."""
    principal: str | None = None
    owner: str | None = None
    trace_id: str | None = None
    """The model-call span's trace (``loom.call.trace_id``), where the record says."""
    record_hash: str = ""
    """The record's chain hash when it recomputes from the record as read (``sound_hash``), else ``""``."""

    @property
    def order(self) -> tuple[int, str, int]:
        """Log order across writers: time, then the chain and its sequence number."""
        return (self.time, self.origin, self.seq)


def sound_hash(record: Mapping[str, Any] | None) -> str:
    """The chain hash of a journal record when it recomputes from the record's content, else ``""``: a
    record's standing (``_standing``) is looked up by it, so a copy that is not the chained one never
    borrows the chained one's standing."""
    if record is None:
        return ""
    digest, prev = record.get("hash"), record.get("prev")
    if not isinstance(digest, str) or not isinstance(prev, str):
        return ""
    try:
        unhashed = dict(record)  # C-level copy, then the one key out
        del unhashed["hash"]
        body = canonical_json(unhashed)
        return digest if chain_hash(prev, body) == digest else ""
    except (ValueError, TypeError, OverflowError, RecursionError):
        return ""


def event_hash(name: str, attributes: Mapping[str, Any], time: int) -> str:
    """``sound_hash`` of the record a span event carries (``""``: none, or not sound)."""
    return sound_hash(record_from_event(name, attributes, time))


def _strs(value: object) -> tuple[str, ...]:
    return tuple(map(str, value)) if isinstance(value, (list, tuple)) else ()


def from_attributes(
    attributes: Mapping[str, Any], *, origin: str, seq: int, time: int, record_hash: str = ""
) -> CaptureRecord | None:
    """A record from flat capture attributes; ``None`` when they are not a well-formed capture."""
    try:
        kinds = _strs(attributes.get(attr.PART_KIND))
        n = len(kinds)
        refs = _strs(attributes.get(attr.PART_REF)) or ("",) * n
        digests = _strs(attributes.get(attr.PART_DIGEST)) or ("",) * n
        sizes = tuple(map(int, attributes.get(attr.PART_SIZE) or (0,) * n))
        omitted = tuple(v is True or v == "true" for v in attributes.get(attr.PART_OMITTED) or (False,) * n)
        tenant = attributes.get(attr.TENANT)
        principal, owner = attributes.get(attr.PRINCIPAL), attributes.get(attr.OWNER)
        request_model = str(attributes.get(attr.GEN_AI_REQUEST_MODEL) or "")
        record = CaptureRecord(
            execution_id=str(attributes[attr.EXECUTION_ID]),
            step_id=str(attributes[attr.STEP_ID]),
            attempt=int(attributes.get(attr.ATTEMPT) or 1),
            tenant=None if tenant is None else str(tenant),
            provider=str(attributes.get(attr.GEN_AI_PROVIDER_NAME) or ""),
            request_model=request_model,
            response_model=str(attributes.get(attr.GEN_AI_RESPONSE_MODEL) or request_model),
            kinds=kinds,
            refs=refs,
            digests=digests,
            sizes=sizes,
            omitted=omitted,
            origin=origin,
            seq=seq,
            time=time,
            layout=_strs(attributes.get(attr.LAYOUT)),
            principal=str(principal) if principal else None,
            owner=str(owner) if owner else None,
            trace_id=str(attributes.get(attr.CALL_TRACE_ID) or "") or None,
            record_hash=record_hash,
        )
    except (KeyError, TypeError, ValueError):
        return None
    if not n or not (len(refs) == len(digests) == len(sizes) == len(omitted) == n):
        return None
    return record


def _journal_record(record: Mapping[str, Any]) -> CaptureRecord | None:
    attributes = record.get("attributes")
    if record.get("type") != attr.RECORD_CAPTURE or not isinstance(attributes, dict):
        return None
    try:
        origin, seq, time = str(record["origin"]), int(record["seq"]), int(record["time"])
    except (KeyError, TypeError, ValueError):
        return None
    return from_attributes(attributes, origin=origin, seq=seq, time=time, record_hash=sound_hash(record))


def parse_journal_line(line: bytes) -> CaptureRecord | None:
    """One journal line (a record of any type); ``None`` unless it is a well-formed capture record."""
    if b'"capture"' not in line:  # cheap skip for checkpoints and other record types
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return _journal_record(record) if isinstance(record, dict) else None


def any_value(value: Mapping[str, Any]) -> object:
    """An OTLP JSON ``AnyValue`` as a Python value (ints arrive as strings)."""
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    return None


def _event_record(attributes: Mapping[str, Any], time: int) -> CaptureRecord | None:
    try:
        origin = str(attributes.get(attr.AUDIT_ORIGIN) or "")
        seq = int(attributes.get(attr.AUDIT_SEQ) or 0)
    except (TypeError, ValueError):
        return None
    digest = event_hash(attr.EVENT_CAPTURED, attributes, time)
    return from_attributes(attributes, origin=origin, seq=seq, time=time, record_hash=digest)


def parse_collector_line(line: bytes) -> list[CaptureRecord]:
    """The capture events of one OTLP JSON line (``{"resourceSpans": [...]}`` or ``{"resourceLogs": [...]}``)
    of a collector file."""
    if attr.EVENT_CAPTURED.encode() not in line:
        return []
    try:
        document = json.loads(line)
    except ValueError:
        return []
    found: list[CaptureRecord] = []
    if not isinstance(document, dict):
        return found
    try:
        events = list(raw_events(document))
    except (ValueError, TypeError, AttributeError):
        return found
    for event in events:
        if not isinstance(event, dict) or event.get("name") != attr.EVENT_CAPTURED:
            continue
        try:
            attributes = {a["key"]: any_value(a.get("value") or {}) for a in event.get("attributes") or ()}
            time = int(event.get("timeUnixNano") or 0)
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
        record = _event_record(attributes, time)
        if record is not None:
            found.append(record)
    return found


def _span_captures(spans: Iterable[SpanLike]) -> Iterator[CaptureRecord]:
    for span in spans:
        for event in span.events:
            if event.name != attr.EVENT_CAPTURED:
                continue
            record = _event_record(dict(event.attributes or {}), int(event.timestamp or 0))
            if record is not None:
                yield record


def _file_captures(path: Path) -> Iterator[CaptureRecord]:
    with path.open("rb") as fh:
        for line in fh:
            if line.endswith(b"\n"):
                yield from parse_collector_line(line)


def iter_captures(source: ReasoningSource) -> Iterator[CaptureRecord]:
    """Every capture record of ``source``, duplicates (a resent span) removed, in source order."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            records: Iterator[CaptureRecord] = (r for r in map(_journal_record, iter_records(path)) if r is not None)
        elif path.is_file():
            records = _file_captures(path)
        else:
            raise FileNotFoundError(f"no journal directory or collector file at {str(path)!r}")
    else:
        records = _span_captures(source)
    seen: set[tuple[str, int]] = set()
    for record in records:
        if record.origin:
            key = (record.origin, record.seq)
            if key in seen:
                continue
            seen.add(key)
        yield record
