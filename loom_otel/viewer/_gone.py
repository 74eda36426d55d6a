"""How many parts of each listed execution are erased or missing: a blob gone with a proven tombstone
of its execution, or gone without one (``PartResolver.gone``: the store is asked whether each blob
exists, no text is read). Only the captures the reader may read are counted, and only for the
executions of the page shown."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from loom_otel.audit._index import CaptureIndex, ListedExecution, StaleIndexError
from loom_otel.audit._read import PartResolver, PartStatus
from loom_otel.audit._standing import Standings
from loom_otel.audit._tombstones import TombstoneIndex
from loom_otel.core.policy import Audience, ReadingPolicy, may_read
from loom_otel.core.stores import ReasoningStore
from loom_otel.viewer._reading import Evidence

__all__ = ["Gone", "gone_parts"]


@dataclass(frozen=True, slots=True)
class Gone:
    """An execution's parts whose text is gone: ``erased`` (lawfully, a proven tombstone says when, why
    and by whom) and ``missing`` (gone without one)."""

    erased: int = 0
    missing: int = 0


def _count(
    index: CaptureIndex, row: ListedExecution, resolver: PartResolver, reader: str, policy: ReadingPolicy
) -> Gone:
    rows = [
        r
        for r in index.rows(row.execution_id, row.tenant, None)
        if may_read(reader, Audience(r.tenant, r.principal, r.owner), policy)
    ]
    erased = missing = 0
    for record in index.read(rows):
        for i in range(len(record.kinds)):
            status = resolver.gone(record, i)
            erased += status is PartStatus.ERASED
            missing += status is PartStatus.MISSING
    return Gone(erased, missing)


def gone_parts(
    evidence: Evidence, store: ReasoningStore, reader: str, policy: ReadingPolicy, rows: Iterable[ListedExecution]
) -> dict[tuple[str, str | None], Gone]:
    """Per (execution, tenant) of ``rows``: its erased and missing parts, of the captures ``reader`` may read."""
    rows = list(rows)
    tombstones = TombstoneIndex(evidence.source, Standings(evidence.source, evidence.trust))
    for attempt in range(2):
        with evidence.open() as index:
            try:
                return {
                    (row.execution_id, row.tenant): _count(
                        index, row, PartResolver(store, row.tenant, row.execution_id, tombstones), reader, policy
                    )
                    for row in rows
                }
            except StaleIndexError:
                if attempt:
                    raise
                index.rebuild()
    raise AssertionError("unreachable")
