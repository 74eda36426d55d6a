"""``list_executions``: which executions a journal (or a collector file, or spans) holds, newest first.

One summary per (tenant, execution): its model calls (capture records), steps, parts and their
statuses, the providers and the time of its first and last capture. Without a store, the statuses a
record alone decides (``redacted``, ``empty``, ``not-kept``) are given and the parts kept in a store are
counted as ``stored`` (not checked); with a store each kept part is read and checked as
``read_reasoning`` does (``ok``, ``erased``, ``missing``, ``digest-mismatch``). No text is returned.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from typing import Final

from loom_otel.audit._captures import CaptureRecord, ReasoningSource, iter_captures
from loom_otel.audit._read import PartResolver, PartStatus, group_steps, recorded_status
from loom_otel.audit._tombstones import TombstoneIndex
from loom_otel.core.stores import ReasoningStore

__all__ = ["ANY_TENANT", "STORED", "ExecutionSummary", "list_executions"]

STORED: Final = PartStatus.STORED.value
"""The status of a part kept in the store when no store was given to check it."""
_ORDER: Final = {
    status: i
    for i, status in enumerate((PartStatus.OK, STORED, *(s for s in PartStatus if s not in (PartStatus.OK, STORED))))
}
"""Statuses as listed: ``ok``, ``stored``, then the others in ``PartStatus`` order."""


class _AnyTenant(enum.Enum):
    ANY = "any"


ANY_TENANT: Final = _AnyTenant.ANY
"""``list_executions(tenant=ANY_TENANT)``: executions of every tenant (and of none)."""


@dataclass(frozen=True, slots=True)
class ExecutionSummary:
    """One execution of one tenant as its capture records describe it."""

    execution_id: str
    tenant: str | None
    first: int
    """Unix time (ns) of the first capture."""
    last: int
    """Unix time (ns) of the last capture."""
    calls: int
    """Model calls captured (capture records; a retried step counts each attempt)."""
    steps: int
    parts: int
    statuses: tuple[tuple[str, int], ...]
    """(status, parts) pairs, in ``_ORDER``."""
    providers: tuple[str, ...]
    checked: bool
    """The parts kept in the store were read and checked (a store was given)."""

    @property
    def intact(self) -> bool:
        """No part reads as ``digest-mismatch``."""
        return all(status != PartStatus.DIGEST_MISMATCH.value for status, _ in self.statuses)


def _summary(
    records: list[CaptureRecord], store: ReasoningStore | None, tombstones: TombstoneIndex
) -> ExecutionSummary:
    first = records[0]
    resolver = PartResolver(store, first.tenant, first.execution_id, tombstones) if store is not None else None
    counts: dict[str, int] = {}
    for record in records:
        for index in range(len(record.kinds)):
            status = recorded_status(record, index)
            if status is None and resolver is not None:
                status = resolver.resolve(record, index, received=False).status
            name = STORED if status is None else status.value
            counts[name] = counts.get(name, 0) + 1
    return ExecutionSummary(
        execution_id=first.execution_id,
        tenant=first.tenant,
        first=min(r.time for r in records),
        last=max(r.time for r in records),
        calls=len(records),
        steps=len(group_steps(records)),
        parts=sum(len(r.kinds) for r in records),
        statuses=tuple(sorted(counts.items(), key=lambda item: _ORDER[item[0]])),
        providers=tuple(sorted({r.provider for r in records if r.provider})),
        checked=store is not None,
    )


def list_executions(
    source: ReasoningSource,
    store: ReasoningStore | None = None,
    *,
    tenant: str | _AnyTenant | None = ANY_TENANT,
    since: int | None = None,
    limit: int | None = None,
) -> list[ExecutionSummary]:
    """The executions ``source`` holds, newest (latest capture) first.

    ``tenant`` keeps one tenant's executions (``None``: those without a tenant); ``since`` (Unix ns)
    keeps executions with a capture at or after it, each summarized whole; ``limit`` keeps the newest
    ``limit``. The store, when given, is read only for the executions returned.
    """
    if not isinstance(source, (str, os.PathLike)):
        source = tuple(source)  # read twice: the captures, then (only if a blob is gone) the tombstones
    groups: dict[tuple[str | None, str], list[CaptureRecord]] = {}
    for record in iter_captures(source):
        if tenant is not ANY_TENANT and record.tenant != tenant:
            continue
        groups.setdefault((record.tenant, record.execution_id), []).append(record)
    newest = sorted(
        (records for records in groups.values() if since is None or max(r.time for r in records) >= since),
        key=lambda records: max(r.order for r in records),
        reverse=True,
    )
    if limit is not None:
        newest = newest[: max(0, limit)]
    tombstones = TombstoneIndex(source)
    return [_summary(records, store, tombstones) for records in newest]
