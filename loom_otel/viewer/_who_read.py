"""Who read what: the viewer's read records (``_reads``), read back from the reads journal on every
request (each worker's chain included; ``ReadsJournal`` reads only the lines appended since the last),
joined to the capture records of the parts they name, and narrowed to what the asking reader may see:
every read of a tenant to its auditors (refused reads included), and to a principal the reads of the
parts whose every capture is theirs (never a read of another principal's part, never a refused read).
No text is read: a listing holds names, references and outcomes only."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from loom_otel.audit._captures import CaptureRecord
from loom_otel.audit._index import CaptureIndex, StaleIndexError
from loom_otel.core.journal import Position, list_origins, read_lines, segments
from loom_otel.core.policy import Audience, ReadingPolicy, may_read
from loom_otel.viewer._reading import Evidence
from loom_otel.viewer._reads import ReadRecord, read_record

__all__ = ["ListedRead", "PartPlace", "PartReads", "ReadsFilter", "ReadsJournal", "part_reads", "reads_page"]


@dataclass(frozen=True, slots=True)
class ReadsFilter:
    """What ``reads_page`` keeps: a reader, an execution, a tenant (``any_tenant``: every one), a part (a
    substring of its ref or digest), an outcome (exact), reads in [``since``, ``until``] (Unix ns), and
    ``principal``: reads of a part a capture of that principal holds (who read their captures)."""

    reader: str = ""
    execution_id: str = ""
    tenant: str | None = None
    any_tenant: bool = True
    part: str = ""
    outcome: str = ""
    since: int | None = None
    until: int | None = None
    principal: str = ""

    def keeps(self, read: ReadRecord) -> bool:
        return (
            (not self.reader or read.reader == self.reader)
            and (not self.execution_id or read.execution_id == self.execution_id)
            and (self.any_tenant or read.tenant == self.tenant)
            and (not self.part or (bool(read.ref) and (self.part in read.ref or self.part in read.digest)))
            and (not self.outcome or read.outcome == self.outcome)
            and (self.since is None or read.time >= self.since)
            and (self.until is None or read.time <= self.until)
        )


@dataclass(frozen=True, slots=True)
class PartPlace:
    """Where a ref is in an execution's captures: its step, attempt, part index and kind, and whose (a
    ref is content-addressed: parts of the same text in one execution share it)."""

    step_id: str
    attempt: int
    index: int
    kind: str
    principal: str | None


@dataclass(frozen=True, slots=True)
class ListedRead:
    """One read as the reads page shows it; ``parts``: where the blob it read is in the execution's
    captures (empty: a refused read, or a ref no capture names any more)."""

    time: int
    reader: str
    tenant: str | None
    execution_id: str
    ref: str
    digest: str
    outcome: str
    parts: tuple[PartPlace, ...]
    origin: str
    seq: int


@dataclass(frozen=True, slots=True)
class PartReads:
    """How many times a part was read, and by whom (each reader once, in order of first read)."""

    count: int
    readers: tuple[str, ...]


def _places(records: Iterable[CaptureRecord]) -> dict[str, list[PartPlace]]:
    """Per ref, where the capture records name it."""
    held: dict[str, list[PartPlace]] = {}
    for record in records:
        for i, ref in enumerate(record.refs):
            if ref:
                kind = record.kinds[i] if i < len(record.kinds) else ""
                held.setdefault(ref, []).append(PartPlace(record.step_id, record.attempt, i, kind, record.principal))
    return held


class _Joiner:
    """The capture records of each execution a listing meets, asked once per request of one opened index:
    whose captures it holds (from the index alone) and, only where needed, where each ref is (the lines
    of that execution's rows)."""

    def __init__(self, index: CaptureIndex) -> None:
        self.index = index
        self._principals: dict[tuple[str, str | None], frozenset[str | None]] = {}
        self._known: dict[tuple[str, str | None], dict[str, list[PartPlace]]] = {}

    def principals(self, read: ReadRecord) -> frozenset[str | None]:
        key = (read.execution_id, read.tenant)
        if key not in self._principals:
            self._principals[key] = frozenset(r.principal for r in self.index.rows(*key, None))
        return self._principals[key]

    def held(self, read: ReadRecord) -> list[PartPlace]:
        key = (read.execution_id, read.tenant)
        if key not in self._known:
            try:
                records = list(self.index.select(*key, None, None))
            except StaleIndexError:  # the journal was rewritten since the index saw it: once more, rebuilt
                self.index.rebuild()
                self.index.refresh()
                records = list(self.index.select(*key, None, None))
            self._known[key] = _places(records)
        return self._known[key].get(read.ref, []) if read.ref else []


def _visible(viewer: str, policy: ReadingPolicy, read: ReadRecord, joiner: _Joiner) -> bool:
    """May ``viewer`` see this read: as an auditor of its tenant, or as the principal of every capture
    of the part it read (every capture of its execution is theirs: no line is read to tell)."""
    if may_read(viewer, Audience(read.tenant, None, None), policy):  # a part nobody asked for: auditors
        return True
    if not read.ref or viewer not in joiner.principals(read):
        return False
    if joiner.principals(read) == {viewer}:
        return True
    held = joiner.held(read)
    return bool(held) and all(h.principal == viewer for h in held)


class _Followed:
    """One origin of a reads journal as read so far: where its last whole line ends, how far each segment
    was read, and its read records (also by execution and tenant: a page's who-read looks up its own
    execution's reads, not every read ever recorded)."""

    def __init__(self) -> None:
        self.position = Position()
        self.read_to: dict[int, int] = {}
        self.records: list[ReadRecord] = []
        self.by_execution: dict[tuple[str, str | None], list[ReadRecord]] = {}

    def stale(self, origin_dir: Path) -> bool:
        """A segment read before is gone or shorter now (a journal only grows: read it again)."""
        sizes = {number: path.stat().st_size for number, path in segments(origin_dir)}
        return any(sizes.get(number, -1) < end for number, end in self.read_to.items())

    def advance(self, origin_dir: Path) -> None:
        """Read the whole lines appended since (a torn last line is read again next time, whole)."""
        for line in read_lines(origin_dir, self.position):
            if line.torn:
                break
            self.position = line.end
            self.read_to[line.end.segment] = line.end.offset
            if line.too_long:
                continue
            try:
                record = json.loads(line.data)
            except ValueError:
                continue
            read = read_record(record) if isinstance(record, dict) else None
            if read is not None:
                self.records.append(read)
                self.by_execution.setdefault((read.execution_id, read.tenant), []).append(read)


class ReadsJournal:
    """The read records of a reads journal directory (every worker's origin), followed: each call reads
    only the lines appended since the last one, and an origin whose files shrank or vanished is read
    again from its start. Thread-safe; one per app."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._lock = threading.Lock()
        self._origins: dict[str, _Followed] = {}

    def records(self) -> list[ReadRecord]:
        """Every read record, in chain order per origin."""
        with self._lock:
            names = self._advanced()
            return [read for name in names for read in self._origins[name].records]

    def of_execution(self, execution_id: str, tenant: str | None) -> list[ReadRecord]:
        """The read records of one execution of ``tenant``, in chain order per origin (those of
        ``records`` with that execution and tenant)."""
        key = (execution_id, tenant)
        with self._lock:
            names = self._advanced()
            return [read for name in names for read in self._origins[name].by_execution.get(key, ())]

    def _advanced(self) -> list[str]:
        """The origins, each read up to its last whole line (the lock held)."""
        names = list_origins(self.directory)
        for name in set(self._origins) - set(names):
            del self._origins[name]
        for name in names:
            followed = self._origins.get(name)
            if followed is None or followed.stale(self.directory / name):
                followed = self._origins[name] = _Followed()
            followed.advance(self.directory / name)
        return names


def reads_page(
    evidence: Evidence,
    reads: Iterable[ReadRecord],
    viewer: str,
    policy: ReadingPolicy,
    keep: ReadsFilter,
    *,
    offset: int = 0,
    limit: int = 50,
) -> tuple[list[ListedRead], int]:
    """A page of ``reads`` (``ReadsJournal.records``) that ``keep`` keeps and ``viewer`` may see, newest
    first, and how many there are."""
    with evidence.open() as index:
        joiner = _Joiner(index)
        kept: list[ReadRecord] = []
        for read in reads:
            if not keep.keeps(read) or not _visible(viewer, policy, read, joiner):
                continue
            if keep.principal and not any(h.principal == keep.principal for h in joiner.held(read)):
                continue
            kept.append(read)
        kept.sort(key=lambda r: (r.time, r.origin, r.seq), reverse=True)
        page = kept[max(0, offset) : max(0, offset) + max(0, limit)]
        # where each part read is: the capture lines of the page's executions only
        return [_listed(read, joiner.held(read)) for read in page], len(kept)


def _listed(read: ReadRecord, held: list[PartPlace]) -> ListedRead:
    return ListedRead(
        read.time,
        read.reader,
        read.tenant,
        read.execution_id,
        read.ref,
        read.digest,
        read.outcome,
        tuple(held),
        read.origin,
        read.seq,
    )


def part_reads(
    evidence: Evidence,
    reads: Iterable[ReadRecord],
    viewer: str,
    policy: ReadingPolicy,
    *,
    execution_id: str,
    tenant: str | None,
) -> Mapping[str, PartReads]:
    """Per ref of the execution: how many times and by whom it was read, of the reads ``viewer`` may see."""
    counts: dict[str, int] = {}
    readers: dict[str, dict[str, None]] = {}
    keep = ReadsFilter(execution_id=execution_id, tenant=tenant, any_tenant=False)
    with evidence.open() as index:
        joiner = _Joiner(index)
        for read in reads:
            if not read.ref or not keep.keeps(read) or not _visible(viewer, policy, read, joiner):
                continue
            counts[read.ref] = counts.get(read.ref, 0) + 1
            readers.setdefault(read.ref, {})[read.reader] = None
    return {ref: PartReads(n, tuple(readers[ref])) for ref, n in counts.items()}
