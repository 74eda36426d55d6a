"""Erasure by age and retention (DESIGN "Reading and erasure"; ``LOOM_OTEL_RETENTION``).

An execution's age is the time of its newest capture, so a conversation still going on is never erased
piece by piece. ``erase_older`` erases the executions of one tenant last captured before a time
(``loom-otel erase --older-than`` / ``--before``); ``apply_retention`` applies a default retention and
per-tenant ones (``loom-otel retain``, and ``loom-otel serve`` while it runs). Each erasure appends a
chained tombstone naming the selection, who asked or which policy, and the reason. An execution whose
newest capture is already covered by a tombstone is not erased again (a cron job does not add a
tombstone per old execution on every run).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from loom_otel.audit._captures import ReasoningSource, iter_captures
from loom_otel.audit._erase import ErasureResult, erase_execution
from loom_otel.audit._tombstones import TombstoneIndex, operator
from loom_otel.core import environment_variables as env
from loom_otel.core.journal import Journal, open_journal
from loom_otel.core.stores import ReasoningStore, Retention, parse_retention

__all__ = [
    "Expired",
    "Progress",
    "Retention",
    "apply_retention",
    "erase_expired",
    "expired_executions",
    "parse_retention",
    "retention_from_environment",
]

Progress = Callable[[int, int, ErasureResult], None]
"""``progress(done, total, result)``, called after each execution is erased."""


def retention_from_environment(environ: Mapping[str, str] | None = None) -> Retention | None:
    """``LOOM_OTEL_RETENTION`` (``None`` when unset or ``none``)."""
    value = (os.environ if environ is None else environ).get(env.LOOM_OTEL_RETENTION)
    return None if value is None else parse_retention(value)


@dataclass(frozen=True, slots=True)
class Expired:
    """One execution selected for erasure: its newest capture is older than the cut-off."""

    tenant: str | None
    execution_id: str
    newest: int
    """Unix ns of its newest capture."""


def _newest(source: ReasoningSource) -> dict[tuple[str | None, str], int]:
    newest: dict[tuple[str | None, str], int] = {}
    for record in iter_captures(source):
        key = (record.tenant, record.execution_id)
        if record.time > newest.get(key, -1):
            newest[key] = record.time
    return newest


def expired_executions(
    source: ReasoningSource, cutoff: Callable[[str | None], int | None]
) -> tuple[list[Expired], int]:
    """The executions of ``source`` whose newest capture is before ``cutoff(tenant)`` (Unix ns; ``None``:
    that tenant keeps everything), oldest first, and how many of those a tombstone already covers
    (left out)."""
    if not isinstance(source, (str, os.PathLike)):
        source = tuple(source)
    tombstones = TombstoneIndex(source, proven=False)
    found: list[Expired] = []
    covered = 0
    for (tenant, execution_id), newest in _newest(source).items():
        limit = cutoff(tenant)
        if limit is None or newest >= limit:
            continue
        if tombstones.covering(tenant, execution_id, newest) is not None:
            covered += 1
            continue
        found.append(Expired(tenant, execution_id, newest))
    found.sort(key=lambda e: (e.newest, e.tenant or "", e.execution_id))
    return found, covered


def erase_expired(
    store: ReasoningStore,
    expired: Iterable[Expired],
    *,
    journal: str | os.PathLike[str] | Journal,
    scope: str | Callable[[Expired], str],
    by: str | Callable[[Expired], str],
    reason: str,
    progress: Progress | None = None,
    local: bool = False,
) -> list[ErasureResult]:
    """Erase each of ``expired`` (a tombstone each, then its blobs), reporting ``progress``; ``scope`` and
    ``by`` name the selection and who asked, the same for all or per execution; ``local``: the tombstones
    stay in the journal, not forwarded (``erase_execution``)."""
    chosen = list(expired)
    target = journal if isinstance(journal, Journal) else open_journal(journal, durability="always")
    results: list[ErasureResult] = []
    try:
        for number, item in enumerate(chosen, 1):
            result = erase_execution(
                store,
                item.tenant,
                item.execution_id,
                journal=target,
                reason=reason,
                by=by if isinstance(by, str) else by(item),
                scope=scope if isinstance(scope, str) else scope(item),
                local=local,
            )
            results.append(result)
            if progress is not None:
                progress(number, len(chosen), result)
    finally:
        if not isinstance(journal, Journal):
            target.close()
    return results


def apply_retention(
    source: ReasoningSource,
    store: ReasoningStore,
    *,
    default: Retention | None,
    tenants: Mapping[str, Retention | None] | None = None,
    journal: str | os.PathLike[str] | Journal | None = None,
    now: float | None = None,
    progress: Progress | None = None,
    local: bool = False,
) -> list[ErasureResult]:
    """Erase every execution of ``source`` older than its tenant's retention (``tenants``, e.g. the policy
    file's ``retention`` per tenant, where the tenant is listed; else ``default``), with a tombstone
    naming the policy (reason ``retention``). ``journal``: where tombstones go (default: ``source`` when
    it is a journal directory); ``local``: the tombstones are not forwarded (``erase_execution``). What
    ``loom-otel retain`` and ``loom-otel serve`` call."""
    tenants = tenants or {}
    at = time.time() if now is None else now

    def policy(tenant: str | None) -> Retention | None:
        return tenants[tenant] if tenant is not None and tenant in tenants else default

    def cutoff(tenant: str | None) -> int | None:
        retention = policy(tenant)
        return None if retention is None else int((at - retention.seconds) * 1e9)

    expired, _ = expired_executions(source, cutoff)
    if journal is None:
        if not isinstance(source, (str, os.PathLike)) or not os.path.isdir(source):
            raise ValueError("apply_retention needs journal= when source is not a journal directory")
        journal = source
    who = operator()

    def retention_of(item: Expired) -> Retention:
        retention = policy(item.tenant)
        assert retention is not None  # cutoff() selected it
        return retention

    return erase_expired(
        store,
        expired,
        journal=journal,
        scope=lambda item: f"retention {retention_of(item).text}",
        by=lambda item: f"policy {retention_of(item).named_by}={retention_of(item).text} (run by {who})",
        reason="retention",
        local=local,
        progress=progress,
    )
