"""What a reader may see of the recorded evidence: the executions (from the capture index alone) and
one execution's parts, one page at a time. The reading rule (``may_read``) narrows the records BEFORE any
store read (by the audience each record claims), and only the parts of the page asked for are read from
the store; then the rule runs again on the audience sealed with each blob, which alone admits: a record
naming a blob whose envelope refuses the reader is not shown (a record, an archive line or an index row
only points to a blob; it never widens who may read it)."""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from loom_otel.audit._bounded import MAX_BYTES
from loom_otel.audit._captures import CaptureRecord
from loom_otel.audit._index import (
    CaptureIndex,
    ExecutionFilter,
    IndexRow,
    ListedExecution,
    StaleIndexError,
    index_path_for,
)
from loom_otel.audit._read import AttemptReading, PartResolver, ReasoningReading, StepReading, attempt_reading
from loom_otel.audit._standing import Standings
from loom_otel.audit._tombstones import TombstoneIndex
from loom_otel.core.policy import Audience, ReadingPolicy, may_read
from loom_otel.core.stores import ReasoningStore
from loom_otel.viewer._archive import RemoteArchive
from loom_otel.viewer._reads import Recorded

__all__ = ["Evidence", "ExecutionPage", "list_page", "read_page"]

PAGE_PARTS: Final = 100
PAGE_EXECUTIONS: Final = 50
MAX_PAGE_PARTS: Final = 500


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where the evidence is: a journal directory or a collector ``file`` exporter archive (the source
    of the capture index, a cache in the user's private index directory, ``index_path_for``);
    ``remote``: the archive is on S3 (or any fsspec URL) and ``source`` is its local mirror; ``trust``:
    the hex public keys whose signed checkpoints prove its records (``serve --trust``, ``_standing``)."""

    source: Path
    remote: RemoteArchive | None = None
    trust: frozenset[str] = frozenset()

    @property
    def index_path(self) -> Path:
        """``index_path_for`` the source, found once per process (it makes and checks the private
        directory: not on every request)."""
        found = _index_paths.get(self.source)
        if found is None:
            found = _index_paths[self.source] = index_path_for(self.source)
        return found

    def open(self, *, wait: bool = True) -> contextlib.AbstractContextManager[CaptureIndex]:
        """The capture index, brought up to date: this thread's connection to it, kept open between
        requests (a worker's threads each keep one; SQLite connections stay in their thread); ``wait=False``:
        as far as another writer brings it while it holds the index (``CaptureIndex.refresh``)."""
        if self.remote is not None:
            self.remote.sync()
        held: dict[Path, CaptureIndex] = _held.__dict__.setdefault("indexes", {})
        index = held.get(self.index_path)
        if index is None or index.source != self.source:
            index = held[self.index_path] = CaptureIndex(self.source, self.index_path)
        index.refresh(wait=wait)
        return contextlib.nullcontext(index)


_index_paths: Final[dict[Path, Path]] = {}
"""Each source's index path, as ``Evidence.index_path`` first found it in this process."""
_held: Final = threading.local()
"""Each thread's open capture indexes, by index path."""


def list_page(
    evidence: Evidence, reader: str, policy: ReadingPolicy, keep: ExecutionFilter, *, offset: int = 0, limit: int = 50
) -> tuple[list[ListedExecution], int]:
    """A page of the executions with a capture ``reader`` may read, newest first, and how many there
    are, from the index alone (the rule runs in the query: a large index is never loaded whole)."""

    def readable(tenant: str | None, principal: str | None, owner: str | None) -> bool:
        return may_read(reader, Audience(tenant, principal, owner), policy)

    with evidence.open() as index:
        return index.executions(readable, keep, offset, limit)


@dataclass(frozen=True, slots=True)
class ExecutionPage:
    """A window of the parts a reader may read of one execution, in log order, grouped as ``audit
    show`` groups them; ``trace_ids`` per (step, attempt, origin, seq) for the link to the trace.
    ``truncated``: the window was cut short of the parts asked for by the byte cap (``MAX_BYTES`` of
    readable text per page, as the bounded read); ``limit`` is then the parts it holds."""

    reading: ReasoningReading
    offset: int
    limit: int
    total_parts: int
    trace_ids: dict[tuple[str, int, str, int], str]
    truncated: bool = False
    recorded: Recorded | None = None
    """The read records of this page (``ReadLog.parts``: set once they are written)."""

    @property
    def next_offset(self) -> int | None:
        end = self.offset + self.limit
        return end if end < self.total_parts else None


def _page_records(
    evidence: Evidence,
    execution_id: str,
    tenant: str | None,
    step_id: str | None,
    window: tuple[int, int],
    *,
    reader: str,
    policy: ReadingPolicy,
) -> tuple[list[CaptureRecord], dict[str, tuple[str, int]], int, int] | None:
    """From the index alone: the rows ``reader`` may read (``None``: none), their part count, the last of
    each step (the attempt the application received); then only the lines of the rows that hold parts of
    ``window`` (offset, end) are read. Returns (records, last of step, parts before the first record, total)."""
    for attempt in range(2):
        with evidence.open() as index:
            rows = [
                r
                for r in index.rows(execution_id, tenant, step_id)
                if may_read(reader, Audience(r.tenant, r.principal, r.owner), policy)
            ]
            if not rows:
                return None
            last = {r.step_id: (r.origin, r.seq) for r in rows}  # log order: the last one wins
            chosen: list[IndexRow] = []
            position, skipped = 0, 0
            for row in rows:
                if position + row.parts <= window[0]:
                    skipped += row.parts
                elif position < window[1]:
                    chosen.append(row)
                position += row.parts
            try:
                return list(index.read(chosen)), last, skipped, position
            except StaleIndexError:
                if attempt:
                    raise
                index.rebuild()
    raise AssertionError("unreachable")


def read_page(
    evidence: Evidence,
    store: ReasoningStore,
    reader: str,
    policy: ReadingPolicy,
    *,
    execution_id: str,
    tenant: str | None,
    step_id: str | None = None,
    offset: int = 0,
    limit: int = PAGE_PARTS,
) -> ExecutionPage | None:
    """The parts ``offset`` .. ``offset + limit`` of what ``reader`` may read of the execution (``None``:
    nothing, whether missing or forbidden). Journal lines and store reads: the page's only."""
    limit = max(1, min(limit, MAX_PAGE_PARTS))
    offset = max(0, offset)
    found = _page_records(
        evidence, execution_id, tenant, step_id, (offset, offset + limit), reader=reader, policy=policy
    )
    if found is None:
        return None
    records, last_of_step, position, total = found
    end = _within_bytes(records, position, offset, min(offset + limit, total))
    truncated = end < min(offset + limit, total)
    if truncated:
        limit = end - offset

    def admits(principal: str | None, owner: str | None) -> bool:
        return may_read(reader, Audience(tenant, principal, owner), policy)

    # each record's standing; proven tombstones: erased, else missing; ``admits``: the rule on each blob's
    # sealed audience
    standings = Standings(evidence.source, evidence.trust)
    resolver = PartResolver(store, tenant, execution_id, TombstoneIndex(evidence.source, standings), admits=admits)
    steps: dict[str, list[AttemptReading]] = {}
    trace_ids: dict[tuple[str, int, str, int], str] = {}
    refused = False
    for record in records:
        count = len(record.kinds)
        first, stop = max(offset - position, 0), min(offset + limit - position, count)
        position += count
        if first >= stop:
            continue
        if not resolver.admitted(record):
            refused = True
            continue
        received = last_of_step[record.step_id] == (record.origin, record.seq)
        steps.setdefault(record.step_id, []).append(attempt_reading(resolver, record, received, range(first, stop)))
        if record.trace_id:
            trace_ids[(record.step_id, record.attempt, record.origin, record.seq)] = record.trace_id
    if refused and not steps:
        return None  # every record of the page names a blob sealed to others: nothing, as if missing
    reading = ReasoningReading(
        execution_id, tenant, tuple(StepReading(sid, tuple(attempts)) for sid, attempts in steps.items())
    )
    return ExecutionPage(reading, offset, limit, total, trace_ids, truncated)


def _within_bytes(records: list[CaptureRecord], position: int, offset: int, end: int) -> int:
    """Where the window ``offset`` .. ``end`` stops so that its readable text stays within ``MAX_BYTES``
    (recorded sizes, before any store read); the first part of a page is always in it, so every part can be
    read, one page at a time."""
    used = 0
    for record in records:
        for i, size in enumerate(record.sizes):
            at = position + i
            if at < offset or at >= end:
                continue
            used += size if record.refs[i] else 0
            if used > MAX_BYTES and at > offset:
                return at
        position += len(record.sizes)
    return end
