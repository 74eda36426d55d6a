"""``erase_execution``: delete one execution's reasoning blobs (and its digest key) from a store.

The journal is not touched: records keep their refs, digests and sizes, so the chain still verifies
and later reads report ``erased``. Blobs are sealed per (tenant, execution) and never shared, so
another execution's identical text stays readable. Erasing twice is not an error (the second run
removes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_otel.core._store._protocol import DigestKeyStore, ReasoningStore

__all__ = ["ErasureResult", "erase_execution"]


@dataclass(frozen=True, slots=True)
class ErasureResult:
    """What one erasure removed."""

    tenant: str | None
    execution_id: str
    blobs_removed: int
    digest_key_removed: bool


def erase_execution(store: ReasoningStore, tenant: str | None, execution_id: str) -> ErasureResult:
    """Remove every blob of (``tenant``, ``execution_id``) from ``store``, and its digest key."""
    had_key = isinstance(store, DigestKeyStore) and store.digest_key(tenant, execution_id) is not None
    removed = store.erase_execution(tenant, execution_id)
    return ErasureResult(tenant, execution_id, removed, had_key)
