"""``erase_execution``: delete one execution's reasoning blobs (and its digest key) from a store, after
appending a chained tombstone record to the journal (DESIGN "Reading and erasure").

The capture records are not touched: they keep their refs, digests and sizes, so the chain still
verifies, and later reads report ``erased`` with the tombstone's time and reason (a blob gone without a
tombstone reads ``missing``). The tombstone is written first: an erasure that fails half way leaves a
tombstone and blobs that still read ``ok``, never blobs gone without one. Blobs are sealed per
(tenant, execution) and never shared, so another execution's identical text stays readable. Erasing
twice is not an error (the second run removes nothing, and its tombstone says it was asked again).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from loom_otel.audit._locations import journal_of
from loom_otel.audit._tombstones import Tombstone, operator, tombstone_attributes
from loom_otel.core.journal import Journal, open_journal
from loom_otel.core.journal import attributes as attr
from loom_otel.core.stores import DigestKeyStore, ReasoningStore

__all__ = ["ErasureResult", "erase_execution"]


@dataclass(frozen=True, slots=True)
class ErasureResult:
    """What one erasure removed, and the tombstone that records it."""

    tenant: str | None
    execution_id: str
    blobs_removed: int
    digest_key_removed: bool
    tombstone: Tombstone | None = None


def erase_execution(
    store: ReasoningStore,
    tenant: str | None,
    execution_id: str,
    *,
    journal: str | os.PathLike[str] | Journal | None = None,
    reason: str = "request",
    by: str | None = None,
    scope: str = "execution",
    local: bool = False,
) -> ErasureResult:
    """Append a tombstone of (``tenant``, ``execution_id``) to ``journal``, then remove every blob of
    the execution from ``store``, and its digest key.

    ``journal`` is a ``Journal`` or a journal directory; ``None``: the configured one
    (``LOOM_OTEL_AUDIT_JOURNAL``, else beside a file store, else the user's state directory). ``by``
    names who asked or which policy (default: the operating-system user); ``scope`` the selection the
    execution was erased as part of; ``local``: the tombstone stays in the journal, not forwarded (``loom-otel
    erase``: ``verify --against`` does not expect it in the archive). ``OSError`` when the tombstone cannot
    be written (nothing is erased).
    """
    target = journal if isinstance(journal, Journal) else open_journal(journal_of(journal, store), durability="always")
    attributes = tombstone_attributes(
        tenant, execution_id, scope=scope, by=by or operator(), reason=reason, local=local
    )
    entry = target.append(attr.RECORD_ERASURE, attributes)
    if not isinstance(journal, Journal):
        target.close()  # checkpointed and synced: the tombstone is anchored before anything is deleted
    by_whom = str(attributes[attr.ERASURE_BY])
    tombstone = Tombstone(
        tenant, execution_id, scope, by_whom, reason, entry.time, entry.origin, entry.seq, record_hash=entry.hash
    )
    had_key = isinstance(store, DigestKeyStore) and store.digest_key(tenant, execution_id) is not None
    removed = store.erase_execution(tenant, execution_id)
    return ErasureResult(tenant, execution_id, removed, had_key, tombstone)
