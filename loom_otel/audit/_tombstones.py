"""Tombstones: the chained journal record every erasure appends (DESIGN "Reading and erasure").

A tombstone names what was erased (tenant, execution, the selection it was part of), who asked or which
policy, the reason, and (as the record's ``time``) when. A reader finds a part's blob gone: with a
tombstone of its execution written after the capture the part reads ``erased`` (with the tombstone's
time and reason), without one ``missing``, so lost evidence never looks like a lawful erasure. Only a
tombstone whose standing (``_standing``) is ``signed`` or ``chained`` counts: an ``unproven`` one (an
OTLP span from an unknown origin, a journal line past a broken link) never turns ``missing`` into ``erased``.

Tombstones are read from the same sources as capture records: a journal directory, a collector
``file`` exporter output or SDK spans (a record the chained exporter forwards travels as a
``loom.audit.record`` event whose ``loom.audit.type`` is ``erasure``).
"""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from loom_otel.audit._captures import ReasoningSource, SpanLike, any_value, event_hash, sound_hash
from loom_otel.audit._otlp_json import raw_events
from loom_otel.audit._standing import Standing, Standings, trusted_keys
from loom_otel.core.journal import RECORD_SPAN, AttributeValue, iter_records
from loom_otel.core.journal import attributes as attr

__all__ = ["Tombstone", "TombstoneIndex", "iter_tombstones", "operator", "tombstone_attributes"]


@dataclass(frozen=True, slots=True)
class Tombstone:
    """One erasure of one execution's reasoning, as recorded in the chain."""

    tenant: str | None
    execution_id: str
    scope: str
    by: str
    reason: str
    time: int
    """When the erasure was recorded (Unix ns, the record's ``time``)."""
    origin: str
    seq: int
    record_hash: str = ""
    """The record's chain hash when it recomputes from the record as read, else ``""``."""
    standing: Standing | None = None
    """How far the tombstone is proven (set by ``TombstoneIndex.covering``)."""


def operator() -> str:
    """The operating-system user running this process (``unknown`` when it cannot be told)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, no login name
        return "unknown"


def tombstone_attributes(
    tenant: str | None, execution_id: str, *, scope: str, by: str, reason: str, local: bool = False
) -> dict[str, AttributeValue]:
    """A tombstone's fields; ``local``: its writer does not forward it (``loom.audit.local``)."""
    attributes: dict[str, AttributeValue] = {
        attr.EXECUTION_ID: execution_id,
        attr.ERASURE_SCOPE: scope,
        attr.ERASURE_BY: by,
        attr.ERASURE_REASON: reason,
    }
    if tenant is not None:
        attributes[attr.TENANT] = tenant
    if local:
        attributes[attr.AUDIT_LOCAL] = True
    return attributes


def _tombstone(
    attributes: Mapping[str, Any], *, origin: str, seq: int, time: int, record_hash: str
) -> Tombstone | None:
    execution_id = attributes.get(attr.EXECUTION_ID)
    if not isinstance(execution_id, str):
        return None
    tenant = attributes.get(attr.TENANT)
    return Tombstone(
        tenant=None if tenant is None else str(tenant),
        execution_id=execution_id,
        scope=str(attributes.get(attr.ERASURE_SCOPE) or ""),
        by=str(attributes.get(attr.ERASURE_BY) or ""),
        reason=str(attributes.get(attr.ERASURE_REASON) or ""),
        time=time,
        origin=origin,
        seq=seq,
        record_hash=record_hash,
    )


def _journal_tombstones(directory: Path) -> Iterator[Tombstone]:
    for record in iter_records(directory):
        attributes = record.get("attributes")
        if record.get("type") != attr.RECORD_ERASURE or not isinstance(attributes, dict):
            continue
        try:
            origin, seq, time = str(record["origin"]), int(str(record["seq"])), int(str(record["time"]))
        except (KeyError, ValueError):
            continue
        found = _tombstone(attributes, origin=origin, seq=seq, time=time, record_hash=sound_hash(record))
        if found is not None:
            yield found


def _event_tombstone(name: str, attributes: Mapping[str, Any], time: int) -> Tombstone | None:
    if name != RECORD_SPAN or attributes.get(attr.AUDIT_TYPE) != attr.RECORD_ERASURE:
        return None
    try:
        origin, seq = str(attributes.get(attr.AUDIT_ORIGIN) or ""), int(attributes.get(attr.AUDIT_SEQ) or 0)
    except (TypeError, ValueError):
        return None
    digest = event_hash(name, attributes, time)
    return _tombstone(attributes, origin=origin, seq=seq, time=time, record_hash=digest)


def _collector_tombstones(path: Path) -> Iterator[Tombstone]:
    marker = attr.RECORD_ERASURE.encode()
    with path.open("rb") as fh:
        for line in fh:
            if marker not in line or not line.endswith(b"\n"):
                continue
            try:
                document = json.loads(line)
            except ValueError:
                continue
            if not isinstance(document, dict):
                continue
            try:
                events = list(raw_events(document))
            except (ValueError, TypeError, AttributeError):
                continue
            for event in events:
                try:
                    attributes = {a["key"]: any_value(a.get("value") or {}) for a in event["attributes"]}
                    time = int(event.get("timeUnixNano") or 0)
                except (KeyError, TypeError, ValueError, AttributeError):
                    continue
                found = _event_tombstone(str(event.get("name")), attributes, time)
                if found is not None:
                    yield found


def _span_tombstones(spans: Iterable[SpanLike]) -> Iterator[Tombstone]:
    for span in spans:
        for event in span.events:
            found = _event_tombstone(event.name, dict(event.attributes or {}), int(event.timestamp or 0))
            if found is not None:
                yield found


def iter_tombstones(source: ReasoningSource) -> Iterator[Tombstone]:
    """Every tombstone of ``source`` (a journal directory, a collector file, or spans), in source order."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            yield from _journal_tombstones(path)
        elif path.is_file():
            yield from _collector_tombstones(path)
        return
    yield from _span_tombstones(source)


class TombstoneIndex:
    """The tombstones of one source, read once, on the first question (only a read that finds a blob
    gone asks), and the standings of its records.

    ``standings``: how far its records are proven (default: the keys ``trusted_keys()`` finds); only a
    ``signed`` or ``chained`` tombstone covers. ``proven=False`` counts every tombstone (retention: an
    execution some tombstone names is not erased again on every run)."""

    __slots__ = ("_by_execution", "_proven", "_source", "standings")

    def __init__(
        self, source: ReasoningSource | None, standings: Standings | None = None, *, proven: bool = True
    ) -> None:
        self._source = source
        self.standings = standings if standings is not None else Standings(source, trusted_keys())
        self._proven = proven
        self._by_execution: dict[tuple[str | None, str], list[Tombstone]] | None = None

    def covering(self, tenant: str | None, execution_id: str, captured: int) -> Tombstone | None:
        """The first tombstone of (``tenant``, ``execution_id``) recorded at or after ``captured`` (with
        its ``standing``), among the proven ones."""
        if self._by_execution is None:
            self._by_execution = {}
            if self._source is not None:
                for tombstone in iter_tombstones(self._source):
                    self._by_execution.setdefault((tombstone.tenant, tombstone.execution_id), []).append(tombstone)
        candidates = [t for t in self._by_execution.get((tenant, execution_id), ()) if t.time >= captured]
        candidates.sort(key=lambda t: t.time)
        if not self._proven:
            return candidates[0] if candidates else None
        for tombstone in candidates:
            standing = self.standings.of(tombstone.origin, tombstone.seq, tombstone.record_hash)
            if standing.proven:
                return replace(tombstone, standing=standing)
        return None
