"""``check_store``: whether the blobs a journal's (or a collector file's) capture records name are in
the store, whole (``loom-otel verify --store``). A chain can be whole while the evidence it points to
was changed or lost: only reading each blob and its digest tells."""

from __future__ import annotations

from dataclasses import dataclass

from loom_otel.audit._captures import ReasoningSource, iter_captures
from loom_otel.audit._read import PartResolver, PartStatus
from loom_otel.audit._tombstones import TombstoneIndex
from loom_otel.core.stores import FileReasoningStore, PackGap, ReasoningStore, TenantStores

__all__ = ["BlobProblem", "StoreCheck", "check_store", "pack_gaps"]


@dataclass(frozen=True, slots=True)
class BlobProblem:
    """A part whose blob is not as its record says: where the record is, and what was found."""

    origin: str
    seq: int
    execution_id: str
    tenant: str | None
    index: int
    status: PartStatus


@dataclass(frozen=True, slots=True)
class StoreCheck:
    """``parts``: the parts kept in the store that the records name; ``ok``: read back whole.
        ``mismatched``: present but not what was recorded (changed, or sealed to another execution);
        ``erased``: absent, and a tombstone of the source records the erasure; ``missing``: absent with no
        tombstone (lost evidence). ``gaps``: bytes of the file stores' packs that are no whole record (a write
    that failed: its capture failed closed, so no record names it and no evidence is lost; or a torn tail)."""

    parts: int
    ok: int
    mismatched: tuple[BlobProblem, ...]
    erased: tuple[BlobProblem, ...]
    missing: tuple[BlobProblem, ...]
    gaps: tuple[PackGap, ...] = ()


def check_store(source: ReasoningSource, store: ReasoningStore) -> StoreCheck:
    """Read every blob the capture records of ``source`` name from ``store`` and check its digest; a blob
    that is gone is told apart by the tombstones of ``source``."""
    resolvers: dict[tuple[str | None, str], PartResolver] = {}
    tombstones = TombstoneIndex(source)
    parts = ok = 0
    found: dict[PartStatus, list[BlobProblem]] = {PartStatus.ERASED: [], PartStatus.MISSING: []}
    mismatched: list[BlobProblem] = []
    for record in iter_captures(source):
        key = (record.tenant, record.execution_id)
        resolver = resolvers.get(key)
        if resolver is None:
            resolver = resolvers[key] = PartResolver(store, record.tenant, record.execution_id, tombstones)
        for index in range(len(record.kinds)):
            if not record.refs[index]:
                continue
            status = resolver.resolve(record, index, received=True).status
            if status in (PartStatus.REDACTED, PartStatus.EMPTY, PartStatus.NOT_KEPT):
                continue  # the record alone decides: no blob to read
            parts += 1
            if status is PartStatus.OK:
                ok += 1
                continue
            problem = BlobProblem(record.origin, record.seq, record.execution_id, record.tenant, index, status)
            found.get(status, mismatched).append(problem)
    erased, missing = found[PartStatus.ERASED], found[PartStatus.MISSING]
    return StoreCheck(parts, ok, tuple(mismatched), tuple(erased), tuple(missing), pack_gaps(store))


def pack_gaps(store: ReasoningStore) -> tuple[PackGap, ...]:
    """The gaps in the packs of ``store`` and of the tenants' own stores it holds (file stores only)."""
    if isinstance(store, TenantStores):
        return tuple(gap for each in (store.default, *store.tenants.values()) for gap in pack_gaps(each))
    return store.pack_gaps() if isinstance(store, FileReasoningStore) else ()
