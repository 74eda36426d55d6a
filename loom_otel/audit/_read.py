"""``read_reasoning``: join capture records to their sealed blobs, check each digest, group by step.

Per part, ``status`` is one of:

- ``ok``: the blob opened for the queried execution and matched the recorded size and digest; the
  text is returned as ``Untrusted`` (origin ``llm-reasoning:<step>``), never as ``str``;
- ``redacted``: the vendor withheld the block (opaque data; never text);
- ``erased``: the blob is gone and a tombstone of its execution, written after the capture, says so
  (``erase_execution``, ``loom-otel erase``, retention); ``erasure`` holds the tombstone (time, reason,
  who or which policy, its standing); only a ``signed`` or ``chained`` tombstone counts (``_standing``);
- ``missing``: the blob is gone and no proven tombstone accounts for it: lost evidence, never a lawful
  erasure;
- ``digest-mismatch``: a blob is there but does not open for the queried execution (copied from
  another execution or tenant, a damaged seal) or its bytes do not match the recorded size and
  digest (a flipped byte), or, read for a reader (``PartResolver(admits=...)``), its sealed audience
  refuses that reader; its bytes are never returned;
- ``empty``: the vendor returned no readable text (display omitted);
- ``not-kept``: readable text existed but capture was off or no store was configured (``omitted``).

Attempts: a step captured more than once (a retry, a rerun after a crash, or several model calls in
one ``step()``) keeps every attempt; the last one in log order is the value the application received
(``received=True``), the earlier ones are labelled superseded.

Each attempt carries the ``standing`` of its capture record (``signed``, ``chained``, ``unproven``:
``_standing``), judged with the keys the reader trusts.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from loom_otel.audit._captures import CaptureRecord, ReasoningSource, iter_captures
from loom_otel.audit._standing import Standing, Standings, trusted_keys
from loom_otel.audit._tombstones import Tombstone, TombstoneIndex
from loom_otel.core.journal import text_of
from loom_otel.core.policy import Untrusted
from loom_otel.core.stores import (
    DigestKeyStore,
    ReasoningKind,
    ReasoningStore,
    Unsealed,
    digest_matches,
    open_sealed,
    scope_of,
)

__all__ = [
    "AttemptReading",
    "attempt_reading",
    "PartReading",
    "PartResolver",
    "PartStatus",
    "ReasoningReading",
    "StepReading",
    "part_kind",
    "read_reasoning",
    "recorded_status",
]


class PartStatus(enum.StrEnum):
    """What the reader could establish about one recorded part."""

    OK = "ok"
    REDACTED = "redacted"
    ERASED = "erased"
    MISSING = "missing"
    DIGEST_MISMATCH = "digest-mismatch"
    EMPTY = "empty"
    NOT_KEPT = "not-kept"
    STORED = "stored"
    """Kept in the store, not checked: the reading was given no store (no text was asked for)."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class PartReading:
    """One reasoning part as read back. ``text`` is set only when ``status`` is ``ok``."""

    step_id: str
    attempt: int
    received: bool
    index: int
    kind: ReasoningKind
    status: PartStatus
    size: int
    digest: str
    ref: str
    text: Untrusted | None = field(default=None, repr=False)
    erasure: Tombstone | None = None
    """The tombstone of an ``erased`` part (when, why, who or which policy)."""


@dataclass(frozen=True, slots=True)
class AttemptReading:
    """One capture (one model call) of a step, with its parts in vendor order."""

    step_id: str
    attempt: int
    received: bool
    provider: str
    request_model: str
    response_model: str
    origin: str
    seq: int
    time: int
    parts: tuple[PartReading, ...]
    layout: tuple[str, ...] = ()
    """The response's reasoning parts, text blocks and tool calls in vendor order (``core._evidence._layout``)."""
    standing: Standing = Standing.UNPROVEN
    """How far the capture record is proven (``_standing``)."""

    @property
    def superseded(self) -> bool:
        return not self.received


@dataclass(frozen=True, slots=True)
class StepReading:
    """Every attempt of one step, in log order; the last is the one the application received."""

    step_id: str
    attempts: tuple[AttemptReading, ...]

    @property
    def received(self) -> AttemptReading:
        return self.attempts[-1]

    @property
    def superseded(self) -> tuple[AttemptReading, ...]:
        return self.attempts[:-1]


@dataclass(frozen=True, slots=True)
class ReasoningReading:
    """What ``read_reasoning`` found for one execution, steps in order of first capture."""

    execution_id: str
    tenant: str | None
    steps: tuple[StepReading, ...]

    @property
    def parts(self) -> tuple[PartReading, ...]:
        return tuple(p for s in self.steps for a in s.attempts for p in a.parts)

    def step(self, step_id: str) -> StepReading | None:
        return next((s for s in self.steps if s.step_id == step_id), None)

    @property
    def intact(self) -> bool:
        """No part reads as ``digest-mismatch``."""
        return all(p.status is not PartStatus.DIGEST_MISMATCH for p in self.parts)


def part_kind(record: CaptureRecord, index: int) -> ReasoningKind:
    """The recorded kind of part ``index``; an unknown kind reads as ``redacted`` (never served as text)."""
    try:
        return ReasoningKind(record.kinds[index])
    except ValueError:
        return ReasoningKind.REDACTED


def recorded_status(record: CaptureRecord, index: int) -> PartStatus | None:
    """The status the record alone decides (``redacted``, ``empty``, ``not-kept``); ``None`` for a part
    kept in the store, whose status only reading the store can tell."""
    if part_kind(record, index) is ReasoningKind.REDACTED:
        return PartStatus.REDACTED
    if not record.refs[index]:
        return PartStatus.NOT_KEPT if record.omitted[index] and record.sizes[index] > 0 else PartStatus.EMPTY
    return None


Admits = Callable[[str | None, str | None], bool]
"""Whether a reader may read a blob sealed to (principal, owner) in the resolver's tenant (the reading rule)."""


class PartResolver:
    """Reads parts of one (tenant, execution) from the store; the digest key is fetched at most once."""

    __slots__ = (
        "_admits",
        "_execution_id",
        "_key",
        "_key_loaded",
        "_opened",
        "_scope",
        "_store",
        "_tenant",
        "_tombstones",
    )

    def __init__(
        self,
        store: ReasoningStore | None,
        tenant: str | None,
        execution_id: str,
        source: ReasoningSource | TombstoneIndex | None = None,
        *,
        admits: Admits | None = None,
    ) -> None:
        """``source``: where the capture records came from (or its tombstones, shared by several
        resolvers); its proven tombstones tell ``erased`` from ``missing``, its chains each record's
        standing (default: judged with the keys ``trusted_keys()`` finds). ``admits``: the reader's rule,
        run on the audience sealed with each blob (``admitted``); a blob it refuses never gives its text."""
        self._admits = admits
        self._opened: dict[str, Unsealed | None] = {}
        self._tombstones = source if isinstance(source, TombstoneIndex) else TombstoneIndex(source)
        self._store = store
        self._tenant = tenant
        self._execution_id = execution_id
        self._scope = scope_of(tenant, execution_id) + "/"
        self._key: bytes | None = None
        self._key_loaded = False

    def standing(self, record: CaptureRecord) -> Standing:
        """How far ``record`` is proven in the source."""
        return self._tombstones.standings.of(record.origin, record.seq, record.record_hash)

    def _digest_key(self) -> bytes | None:
        if not self._key_loaded:
            self._key_loaded = True
            if isinstance(self._store, DigestKeyStore):
                self._key = self._store.digest_key(self._tenant, self._execution_id)
        return self._key

    def _matches(self, body: bytes, digest: str) -> bool:
        return digest_matches(body, digest, self._digest_key)

    def _absent(self, ref: str, captured: int) -> tuple[PartStatus, Tombstone | None]:
        if not ref.startswith(self._scope):
            return PartStatus.DIGEST_MISMATCH, None  # a ref that is not this execution's can never be its evidence
        if isinstance(self._store, DigestKeyStore) and self._store.exists(ref):
            return PartStatus.DIGEST_MISMATCH, None  # present, but sealed elsewhere or its seal is damaged
        tombstone = self._tombstones.covering(self._tenant, self._execution_id, captured)
        return (PartStatus.MISSING, None) if tombstone is None else (PartStatus.ERASED, tombstone)

    def gone(self, record: CaptureRecord, index: int) -> PartStatus | None:
        """``erased`` or ``missing`` when the part's blob is not in the store, asked with ``exists`` (no
        blob is read: a listing counts them); ``None`` when it is there, when the record alone decides the
        part's status, or when the store cannot answer ``exists``."""
        if recorded_status(record, index) is not None or not isinstance(self._store, DigestKeyStore):
            return None
        status, _ = self._absent(record.refs[index], record.time)
        return status if status in (PartStatus.ERASED, PartStatus.MISSING) else None

    def _open(self, ref: str, *, keep: bool = False) -> Unsealed | None:
        """The blob at ``ref`` opened for this execution, with its sealed audience (none from a store that
        cannot tell it: its tenant's auditors only). ``keep``: held for the part's ``resolve``, which takes
        it (a blob checked by ``admitted`` is not read twice, and no text is held past its part)."""
        if ref in self._opened:
            return self._opened[ref] if keep else self._opened.pop(ref)
        opened: Unsealed | None = None
        if self._store is not None:
            opened = open_sealed(self._store, ref, tenant=self._tenant, execution_id=self._execution_id)
        if keep:
            self._opened[ref] = opened
        return opened

    def _refuses(self, opened: Unsealed) -> bool:
        return self._admits is not None and not self._admits(opened.principal, opened.owner)

    def admitted(self, record: CaptureRecord) -> bool:
        """Whether the reader may see ``record``: no blob it names opens with an audience the reader's rule
        refuses (a record only points to a blob; it never widens who may read it). Without ``admits``:
        always."""
        if self._admits is None or self._store is None:
            return True
        for index, ref in enumerate(record.refs):
            if recorded_status(record, index) is None:
                opened = self._open(ref, keep=True)
                if opened is not None and self._refuses(opened):
                    return False
        return True

    def resolve(self, record: CaptureRecord, index: int, *, received: bool) -> PartReading:
        ref, digest, size = record.refs[index], record.digests[index], record.sizes[index]
        kind = part_kind(record, index)
        text: Untrusted | None = None
        erasure: Tombstone | None = None
        recorded = recorded_status(record, index)
        if recorded is not None:
            status = recorded
        elif self._store is None:
            status = PartStatus.STORED
        else:
            opened = self._open(ref)
            if opened is None:
                status, erasure = self._absent(ref, record.time)
            elif self._refuses(opened) or len(opened.body) != size or not self._matches(opened.body, digest):
                status = PartStatus.DIGEST_MISMATCH  # a blob whose sealed audience refuses the reader: no text
            else:
                status = PartStatus.OK
                text = Untrusted(text_of(opened.body), origin=f"llm-reasoning:{record.step_id}")
        return PartReading(
            record.step_id, record.attempt, received, index, kind, status, size, digest, ref, text, erasure
        )


def attempt_reading(
    resolver: PartResolver, record: CaptureRecord, received: bool, indices: range | None = None
) -> AttemptReading:
    """One capture record read: its parts (``indices``: those only; default all) and its call."""
    chosen = range(len(record.kinds)) if indices is None else indices
    parts = tuple(resolver.resolve(record, i, received=received) for i in chosen)
    return AttemptReading(
        record.step_id,
        record.attempt,
        received,
        record.provider,
        record.request_model,
        record.response_model,
        record.origin,
        record.seq,
        record.time,
        parts,
        record.layout,
        resolver.standing(record),
    )


def group_steps(records: Iterable[CaptureRecord]) -> dict[str, list[CaptureRecord]]:
    """Records by step, each step's records in log order, steps in order of first capture."""
    ordered = sorted(records, key=lambda r: r.order)
    steps: dict[str, list[CaptureRecord]] = {}
    for record in ordered:
        steps.setdefault(record.step_id, []).append(record)
    return steps


def read_reasoning(
    source: ReasoningSource,
    store: ReasoningStore | None,
    execution_id: str,
    step_id: str | None = None,
    tenant: str | None = None,
    *,
    trust: Iterable[str] | None = None,
) -> ReasoningReading:
    """Read back the reasoning one execution captured (optionally one step) from ``source``.

    ``source`` is a journal directory, a collector ``file`` exporter JSON file, or an iterable of SDK
    spans. ``store`` ``None`` reads the records alone: parts kept in a store read as ``stored`` (not
    checked, no text). Only records of ``tenant`` (``None``: records without a tenant) are read, and blobs are
    opened sealed to (``tenant``, ``execution_id``). A part whose blob is gone reads ``erased`` when
    ``source`` holds a tombstone of the execution written after the capture whose standing is ``signed``
    or ``chained``, else ``missing``. ``trust``: the hex Ed25519 public keys whose signed checkpoints
    prove records (``None``: the public half of ``LOOM_OTEL_CHECKPOINT_KEY``, when set; see
    ``_standing``).
    """
    if not isinstance(source, (str, os.PathLike)):
        source = tuple(source)  # read twice: the captures, then (only if a blob is gone) the tombstones
    selected = (
        r
        for r in iter_captures(source)
        if r.execution_id == execution_id and r.tenant == tenant and (step_id is None or r.step_id == step_id)
    )
    keys = trusted_keys() if trust is None else frozenset(k.lower() for k in trust)
    resolver = PartResolver(store, tenant, execution_id, TombstoneIndex(source, Standings(source, keys)))
    steps = tuple(
        StepReading(sid, tuple(attempt_reading(resolver, r, i == len(rs) - 1) for i, r in enumerate(rs)))
        for sid, rs in group_steps(selected).items()
    )
    return ReasoningReading(execution_id, tenant, steps)
