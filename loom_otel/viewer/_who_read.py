"""Who read what: the viewer's read records (``_reads``), read back from the reads journal's index on
every request (each worker's chain included; ``ReadsJournal`` indexes only the lines appended since),
joined to the capture records of the parts they name, and narrowed to what the asking reader may see:
every read of a tenant to its auditors (refused reads included), and to a principal the reads of the
parts whose every capture is theirs (never a read of another principal's part, never a refused read).
No text is read: a listing holds names, references and outcomes only."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from loom_otel.audit._captures import CaptureRecord
from loom_otel.audit._index import CaptureIndex, StaleIndexError
from loom_otel.core.policy import Audience, ReadingPolicy, may_read
from loom_otel.viewer._reading import Evidence
from loom_otel.viewer._reads import ReadRecord, Recorded

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

    def equal(self) -> dict[str, str | None]:
        """What ``keeps`` asks of a read's reader, execution, tenant and outcome, as values to equal (the
        reads index selects by them: ``ReadsJournal.reads``)."""
        equal: dict[str, str | None] = {"reader": self.reader, "execution_id": self.execution_id}
        equal = {column: value for column, value in equal.items() if value}
        if not self.any_tenant:
            equal["tenant"] = self.tenant
        if self.outcome:
            equal["outcome"] = self.outcome
        return equal

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
class ListedRead(ReadRecord):
    """One read as the reads page shows it; ``parts``: where the blob it read is in the execution's
    captures (empty: a refused read, or a ref no capture names any more)."""

    parts: tuple[PartPlace, ...] = ()


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

    def principals(self, key: tuple[str, str | None]) -> frozenset[str | None]:
        if key not in self._principals:
            self._principals[key] = self.index.principals(*key)
        return self._principals[key]

    def held(self, key: tuple[str, str | None], ref: str) -> list[PartPlace]:
        if key not in self._known:
            try:
                records = list(self.index.select(*key, None, None))
            except StaleIndexError:  # the journal was rewritten since the index saw it: once more, rebuilt
                self.index.rebuild()
                self.index.refresh()
                records = list(self.index.select(*key, None, None))
            self._known[key] = _places(records)
        return self._known[key].get(ref, []) if ref else []


def _visible(viewer: str, policy: ReadingPolicy, read: ReadRecord, joiner: _Joiner) -> bool:
    """May ``viewer`` see this read: as an auditor of its tenant, or as the principal of every capture
    of the part it read (every capture of its execution is theirs: no line is read to tell)."""
    return _may_see(viewer, policy, (read.execution_id, read.tenant), read.ref, joiner)


def _may_see(viewer: str, policy: ReadingPolicy, key: tuple[str, str | None], ref: str, joiner: _Joiner) -> bool:
    """``_visible`` of any read of ``ref`` in the execution ``key`` (execution, tenant)."""
    if may_read(viewer, Audience(key[1], None, None), policy):  # a part nobody asked for: auditors
        return True
    if not ref or viewer not in joiner.principals(key):
        return False
    if joiner.principals(key) == {viewer}:
        return True
    held = joiner.held(key, ref)
    return bool(held) and all(h.principal == viewer for h in held)


class ReadsJournal:
    """The read records of a reads journal directory (every worker's origin), through its capture index
    (``Evidence.open``: a persisted cache in the private index directory, brought up to date with the lines
    any worker appended since; a worker started again reads no line twice, and no worker holds every read in
    memory). A journal rewritten (a file shrank or vanished) is indexed again. Thread-safe; one per app."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).absolute()
        self._evidence = Evidence(self.directory)

    def _index(self, *, wait: bool = True) -> contextlib.AbstractContextManager[CaptureIndex | None]:
        if not self.directory.is_dir():
            return contextlib.nullcontext()  # no read recorded yet
        return self._evidence.open(wait=wait)

    def reads(self, equal: Mapping[str, str | None], *, newest_first: bool = True) -> Iterator[ReadRecord]:
        """The read records whose ``reader``, ``execution_id``, ``tenant`` or ``outcome`` are those ``equal``
        names, newest first (else in chain order per origin), streamed."""
        with self._index() as index:
            if index is not None:
                yield from index.reads(equal, newest_first=newest_first)

    def tallies_of(
        self, execution_id: str, tenant: str | None, *, including: Recorded | None = None
    ) -> dict[str, PartReads]:
        """How many times each part of one execution of ``tenant`` was read and by whom (readers in order
        of first read): what the read records with that execution, tenant and a ref add up to; ``including``:
        the asking read's own records (``ReadLog.parts``), counted whether or not they are indexed yet.
        With them, a worker finding another indexing does not queue for it: what that one has not indexed
        yet (other reads of the last moments) is counted at the next read, and its own are added here."""
        with self._index(wait=including is None) as index:
            origin = including.origin if including is not None else ""
            rows, last = index.read_tallies(execution_id, tenant, origin) if index is not None else ([], 0)
        counts: dict[str, int] = {}
        readers: dict[str, dict[str, None]] = {}
        for ref, reader, count in rows:
            counts[ref] = counts.get(ref, 0) + count
            readers.setdefault(ref, {})[reader] = None
        if including is not None:
            for seq, ref in including.reads:
                if seq > last:  # not indexed as the tallies were read: added here
                    counts[ref] = counts.get(ref, 0) + 1
                    readers.setdefault(ref, {})[including.reader] = None
        return {ref: PartReads(n, tuple(readers[ref])) for ref, n in counts.items()}


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
    """A page of ``reads`` (newest first: ``ReadsJournal.reads``) that ``keep`` keeps and ``viewer`` may
    see, and how many there are; only the page is held, however many reads there are."""
    first, end = max(0, offset), max(0, offset) + max(0, limit)
    with evidence.open() as index:
        joiner = _Joiner(index)
        page: list[ReadRecord] = []
        total = 0
        for read in reads:
            key = (read.execution_id, read.tenant)
            if not keep.keeps(read) or not _visible(viewer, policy, read, joiner):
                continue
            if keep.principal and not any(h.principal == keep.principal for h in joiner.held(key, read.ref)):
                continue
            if first <= total < end:
                page.append(read)
            total += 1
        # where each part read is: the capture lines of the page's executions only
        return [_listed(read, joiner.held((read.execution_id, read.tenant), read.ref)) for read in page], total


def _listed(read: ReadRecord, held: list[PartPlace]) -> ListedRead:
    return ListedRead(
        read.time, read.reader, read.tenant, read.execution_id, read.ref, read.digest, read.outcome, read.origin,
        read.seq, read.record_hash, tuple(held),
    )  # fmt: skip


def part_reads(
    evidence: Evidence,
    tallies: Mapping[str, PartReads],
    viewer: str,
    policy: ReadingPolicy,
    *,
    execution_id: str,
    tenant: str | None,
) -> Mapping[str, PartReads]:
    """Per ref of the execution: how many times and by whom it was read, of the reads ``viewer`` may see
    (``tallies``: ``ReadsJournal.tallies_of`` the execution; whether a read may be seen depends only on its
    part, so each part is asked once)."""
    with evidence.open() as index:
        joiner = _Joiner(index)
        return {
            ref: reads
            for ref, reads in tallies.items()
            if _may_see(viewer, policy, (execution_id, tenant), ref, joiner)
        }
