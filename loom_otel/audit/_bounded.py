"""``read_reasoning_bounded``: an endpoint-safe read (ADR D4).

Selection (execution, tenant, step id or step prefix, and optionally the captures themselves) happens
BEFORE any store read; then parts are
taken in log order while ``max_parts`` and ``max_bytes`` allow, the RECORDED size gating each fetch,
so no blob past either cap is ever read. When a cap stops the read, the parts so far are returned
with ``truncated=True``.

For a journal directory or a collector file the selection goes through the capture index
(``_index``, built on first use beside the source, refreshed incrementally), so a query costs the
same on a journal of a thousand records or of millions. Spans are scanned (they are in memory).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final

from loom_otel.audit._captures import CaptureRecord, ReasoningSource, SpanLike, iter_captures
from loom_otel.audit._index import CaptureIndex, StaleIndexError
from loom_otel.audit._read import PartReading, PartResolver
from loom_otel.core.exceptions import ReasoningConfigError
from loom_otel.core.stores import ReasoningStore

__all__ = ["BoundedReading", "CaptureKey", "ReasoningLimits", "ReasoningQuery", "read_reasoning_bounded"]

MAX_PARTS: Final = 256
MAX_BYTES: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class CaptureKey:
    """One capture as the call that made it knows it: its attempt and its part refs in order (``""`` for
    a part that kept no text). Refs are content addressed and sealed to the execution, so a record that
    matches carries no text but the call's own."""

    attempt: int
    refs: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningQuery:
    """Which parts: one execution (of one tenant), optionally one step or the steps under a prefix, and
    optionally only the ``captures`` named (``None``: every capture), matched before any store read."""

    execution_id: str
    tenant: str | None = None
    step_id: str | None = None
    step_prefix: str | None = None
    captures: frozenset[CaptureKey] | None = None

    def chooses(self, record: CaptureRecord) -> bool:
        """``captures`` allows ``record`` (the other fields are matched by the caller or the index)."""
        return self.captures is None or CaptureKey(record.attempt, record.refs) in self.captures


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningLimits:
    """At most ``max_parts`` parts and ``max_bytes`` bytes of readable text (recorded sizes)."""

    max_parts: int = MAX_PARTS
    max_bytes: int = MAX_BYTES

    def __post_init__(self) -> None:
        if self.max_parts < 0 or self.max_bytes < 0:
            raise ReasoningConfigError("reasoning read limits must not be negative")


@dataclass(frozen=True, slots=True)
class BoundedReading:
    """The first parts in log order; ``truncated`` when a cap left parts unread."""

    execution_id: str
    tenant: str | None
    parts: tuple[PartReading, ...]
    truncated: bool
    bytes_read: int


def _matches(record: CaptureRecord, query: ReasoningQuery) -> bool:
    return (
        record.execution_id == query.execution_id
        and record.tenant == query.tenant
        and (query.step_id is None or record.step_id == query.step_id)
        and (not query.step_prefix or record.step_id.startswith(query.step_prefix))
        and query.chooses(record)
    )


def _scan(spans: Iterable[SpanLike], query: ReasoningQuery) -> tuple[list[CaptureRecord], dict[str, tuple[str, int]]]:
    selected = sorted((r for r in iter_captures(spans) if _matches(r, query)), key=lambda r: r.order)
    last = {r.step_id: (r.origin, r.seq) for r in selected}  # sorted: the last one wins
    return selected, last


def _take(
    records: Iterable[CaptureRecord],
    last_of_step: Callable[[str], tuple[str, int] | None],
    resolver: PartResolver,
    limits: ReasoningLimits,
) -> tuple[list[PartReading], bool, int]:
    """Parts in log order while the caps allow; the recorded size gates each fetch."""
    parts: list[PartReading] = []
    used = 0
    received: dict[str, tuple[str, int] | None] = {}
    for record in records:
        if record.step_id not in received:
            received[record.step_id] = last_of_step(record.step_id)
        is_received = received[record.step_id] == (record.origin, record.seq)
        for i in range(len(record.kinds)):
            if len(parts) >= limits.max_parts:
                return parts, True, used
            cost = record.sizes[i] if record.refs[i] else 0
            if used + cost > limits.max_bytes:
                return parts, True, used
            used += cost
            parts.append(resolver.resolve(record, i, received=is_received))
    return parts, False, used


def read_reasoning_bounded(
    source: ReasoningSource,
    store: ReasoningStore,
    query: ReasoningQuery,
    limits: ReasoningLimits | None = None,
    *,
    index_path: str | os.PathLike[str] | None = None,
) -> BoundedReading:
    """The first parts of ``query`` in log order, within ``limits`` (default 256 parts, 1 MiB).

    ``index_path`` overrides where the index of a journal directory or collector file is kept
    (default: in the private index directory, ``index_path_for``).
    """
    limits = limits or ReasoningLimits()
    if not isinstance(source, (str, os.PathLike)):
        source = tuple(source)  # read twice: the captures, then (only if a blob is gone) the tombstones
    resolver = PartResolver(store, query.tenant, query.execution_id, source)
    if not isinstance(source, (str, os.PathLike)):
        records, last = _scan(source, query)
        parts, truncated, used = _take(records, last.get, resolver, limits)
        return BoundedReading(query.execution_id, query.tenant, tuple(parts), truncated, used)
    with CaptureIndex(Path(source), index_path) as index:
        for attempt in range(2):
            index.refresh()
            selected = index.select(query.execution_id, query.tenant, query.step_id, query.step_prefix)
            selected = (r for r in selected if query.chooses(r))
            try:
                # Selection is complete before the first store read: the lines are re-read and checked first.
                records = list(_bounded_prefix(selected, limits.max_parts))
            except StaleIndexError:
                if attempt:
                    raise
                index.rebuild()
                continue
            last_of_step = partial(index.last_of_step, query.execution_id, query.tenant)
            parts, truncated, used = _take(records, last_of_step, resolver, limits)
            return BoundedReading(query.execution_id, query.tenant, tuple(parts), truncated, used)
    raise AssertionError("unreachable")


def _bounded_prefix(records: Iterator[CaptureRecord], max_parts: int) -> Iterator[CaptureRecord]:
    """Enough records to fill ``max_parts`` parts, plus one to tell whether anything was left."""
    count = 0
    for record in records:
        yield record
        count += len(record.kinds)
        if count > max_parts:
            return
