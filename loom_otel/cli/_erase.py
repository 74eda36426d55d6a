"""``loom-otel erase``: erase reasoning from a store, one execution (``--execution``) or every execution of
a tenant last captured before a time (``--older-than 30d``, ``--before DATE``).

Each erasure appends a chained tombstone (scope, who, reason, time) to the journal, then deletes the
blobs (and digest key); the capture records stay, so the chain still verifies and reads report
``erased`` with the tombstone's time and reason. Erasing an execution again is harmless. Exit codes: 0
done, 1 the store or the journal failed, 2 a usage or configuration error (among them: no journal where
the captures went, so no tombstone could prove the erasure), 3 the journal holds no capture of the
``--execution`` under ``--tenant`` (the tenants it was captured under are named; ``--force`` erases anyway).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NamedTuple, TextIO

from loom_otel.audit._captures import iter_captures
from loom_otel.audit._erase import ErasureResult, erase_execution
from loom_otel.audit._locations import journal_of
from loom_otel.audit._retention import Expired, erase_expired, expired_executions, parse_retention
from loom_otel.audit._tombstones import operator
from loom_otel.cli._store_args import open_store, parse_since, with_tenant_stores
from loom_otel.cli._terminal import clean
from loom_otel.core import environment_variables as env
from loom_otel.core.exceptions import LoomOtelError

__all__ = ["Progress", "register", "run"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_OTHER_TENANTS: Final = 3
EXIT_NOTHING: Final = 3


class _Cutoff(NamedTuple):
    ns: int
    """Unix ns: executions whose newest capture is before it are selected."""
    text: str
    """As given on the command line (the tombstones' scope names it)."""


def _older_than(value: str) -> _Cutoff:
    """``--older-than``: a duration (``30d``), as the cut-off it means now."""
    try:
        retention = parse_retention(value, named_by="--older-than")
    except LoomOtelError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if retention is None:
        raise argparse.ArgumentTypeError("--older-than needs a duration such as 30d, 12h")
    return _Cutoff(int((time.time() - retention.seconds) * 1e9), retention.text)


def _before(value: str) -> _Cutoff:
    """``--before``: an ISO 8601 time (UTC unless it carries an offset)."""
    return _Cutoff(parse_since(value), value)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``erase``."""
    parser = subparsers.add_parser(
        "erase",
        help="erase reasoning from the store (one execution, or a tenant's older executions)",
        description="Delete the reasoning blobs (and digest keys) of one execution, or of every execution of "
        "a tenant whose newest capture is older than a duration or before a date. Each erasure first appends "
        "a chained tombstone to the journal; the capture records stay, so the chain still verifies and reads "
        "report 'erased' with the tombstone's time and reason. Running it again is harmless.",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--execution", help="execution id")
    which.add_argument("--older-than", type=_older_than, metavar="DURATION", help="e.g. 30d, 12h")
    which.add_argument("--before", type=_before, metavar="DATE", help="ISO 8601 time, e.g. 2026-01-01")
    parser.add_argument("--tenant", default=None, help="tenant the execution(s) ran under (default: none)")
    parser.add_argument("--store", default=None, help=f"store URL (default: ${env.LOOM_OTEL_REASONING_STORE})")
    parser.add_argument(
        "--journal",
        default=None,
        help=f"journal directory: read to select executions, and given the tombstones "
        f"(default: ${env.LOOM_OTEL_AUDIT_JOURNAL}, else beside a file store)",
    )
    parser.add_argument("--reason", default="request", help="the reason the tombstones record (default: request)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--force",
        action="store_true",
        help="with --execution: write the tombstone (and erase what the store holds) even when the journal "
        "holds no capture of the execution under --tenant",
    )
    parser.set_defaults(func=run)


class Progress:
    """Progress of a long erasure on stderr: about twenty lines whatever the count, and the last one."""

    def __init__(self, err: TextIO) -> None:
        self._err = err

    def __call__(self, done: int, total: int, result: ErasureResult) -> None:
        if total > 1 and (done % max(1, total // 20) == 0 or done == total):
            print(f"erased {done}/{total}: {_who(result.tenant, result.execution_id)}", file=self._err, flush=True)


def _who(tenant: str | None, execution_id: str) -> str:
    return f"execution {clean(execution_id)!r}" + (f" (tenant {clean(tenant)!r})" if tenant is not None else "")


def _payload(result: ErasureResult) -> dict[str, object]:
    tombstone = result.tombstone
    return {
        "execution_id": result.execution_id,
        "tenant": result.tenant,
        "blobs_removed": result.blobs_removed,
        "digest_key_removed": result.digest_key_removed,
        "tombstone": None
        if tombstone is None
        else {"origin": tombstone.origin, "seq": tombstone.seq, "time": tombstone.time, "reason": tombstone.reason},
    }


def _other_tenants(journal: Path, tenant: str | None, execution_id: str | None = None) -> list[str] | None:
    """The tenants captured in ``journal`` (of ``execution_id`` when given) when none of those captures is
    ``tenant``'s, so a mistyped ``--tenant`` or execution selects nothing and says so; ``None`` when
    ``tenant`` has captures there; empty when nothing was captured."""
    tenants = {r.tenant for r in iter_captures(journal) if execution_id is None or r.execution_id == execution_id}
    if tenant in tenants:
        return None
    return sorted("(none)" if t is None else t for t in tenants)


def _tenant_text(tenant: str | None) -> str:
    return f"tenant {clean(tenant)!r}" if tenant is not None else "no tenant"


def _select(args: argparse.Namespace, journal: Path) -> tuple[list[Expired], int, str]:
    cutoff: _Cutoff = args.older_than if args.older_than is not None else args.before
    scope = f"older-than {cutoff.text}" if args.older_than is not None else f"before {cutoff.text}"
    expired, covered = expired_executions(journal, lambda tenant: cutoff.ns if tenant == args.tenant else None)
    return expired, covered, scope


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        store = open_store(args.store)
        journal = journal_of(args.journal, store)
        store = with_tenant_stores(store)  # a tenant's blobs are erased in its own store
    except LoomOtelError as exc:
        print(f"loom-otel erase: {exc}", file=err)
        return EXIT_USAGE
    if not journal.is_dir():  # a tombstone anywhere else would be no proof: reads of the records say missing
        print(
            f"loom-otel erase: no journal at {str(journal)!r}: pass --journal DIR, the journal the captures "
            f"went to (or set {env.LOOM_OTEL_AUDIT_JOURNAL}); its tombstones prove the erasure; nothing erased",
            file=err,
        )
        return EXIT_USAGE
    by = f"{operator()} (loom-otel erase)"
    try:
        if args.execution is not None:
            others = _other_tenants(journal, args.tenant, args.execution)
            if others == [] and not args.force:
                print(
                    f"loom-otel erase: nothing captured for {_who(args.tenant, args.execution)} in the journal "
                    f"{str(journal)!r}; nothing erased (--force writes the tombstone anyway)",
                    file=err,
                )
                return EXIT_NOTHING
            if others and not args.force:
                print(
                    f"loom-otel erase: nothing captured for {_who(args.tenant, args.execution)}; it was captured "
                    f"under tenant(s): {clean(', '.join(others))} (pass --tenant); nothing erased",
                    file=err,
                )
                return EXIT_OTHER_TENANTS
            results = [
                erase_execution(
                    store, args.tenant, args.execution, journal=journal, reason=args.reason, by=by, local=True
                )
            ]
            covered = 0
        else:
            expired, covered, scope = _select(args, journal)
            if not expired and not covered and (tenants := _other_tenants(journal, args.tenant)) is not None:
                known = clean(", ".join(tenants)) if tenants else "none"
                print(
                    f"loom-otel erase: nothing captured for {_tenant_text(args.tenant)} in the journal "
                    f"{str(journal)!r} (tenants captured there: {known}); nothing erased",
                    file=err,
                )
                return EXIT_NOTHING
            results = erase_expired(
                store,
                expired,
                journal=journal,
                scope=scope,
                by=by,
                reason=args.reason,
                progress=Progress(err),
                local=True,
            )
    except (LoomOtelError, OSError) as exc:
        print(f"loom-otel erase: the store or the journal failed ({type(exc).__name__}: {exc})", file=err)
        return EXIT_FAILED
    if args.json:
        print(json.dumps({"erased": [_payload(r) for r in results], "already_erased": covered}), file=out)
        return EXIT_OK
    _report(results, covered, args, store=store, journal=journal, out=out)
    return EXIT_OK


def _report(
    results: Sequence[ErasureResult],
    covered: int,
    args: argparse.Namespace,
    *,
    store: object,
    journal: Path,
    out: TextIO,
) -> None:
    if args.execution is not None:
        (result,) = results
        who = _who(result.tenant, result.execution_id)
        if result.blobs_removed or result.digest_key_removed:
            key = "; digest key destroyed" if result.digest_key_removed else ""
            print(f"erased {result.blobs_removed} blob(s) of {who} from {store!r}{key}", file=out)
        else:
            print(f"nothing to erase for {who} in {store!r} (already erased, or nothing was kept)", file=out)
    else:
        blobs = sum(r.blobs_removed for r in results)
        print(
            f"erased {len(results)} execution(s) of {_tenant_text(args.tenant)} ({blobs} blob(s)) from {store!r}",
            file=out,
        )
        if covered:
            print(f"{covered} older execution(s) were already erased", file=out)
    if results:
        print(f"tombstone(s) appended to the journal {str(journal)!r}", file=out)
