"""``loom-otel retain``: apply the retention policy once (for cron): erase every execution whose newest
capture is older than its retention, each with a chained tombstone naming the policy.

The retention is ``--retention`` (``30d``, ``12h``, ``none``), else ``LOOM_OTEL_RETENTION``; a tenant's
``retention`` in the policy file (``--policy``, else ``LOOM_OTEL_POLICY``) wins for that tenant. Exit codes:
0 done (also when nothing had expired), 1 the store or the journal failed, 2 a usage or configuration
error (no retention set, an invalid one, no store).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Final, TextIO

from loom_otel.audit._locations import journal_of
from loom_otel.audit._retention import apply_retention, parse_retention
from loom_otel.cli._erase import Progress
from loom_otel.cli._store_args import open_store, with_tenant_stores
from loom_otel.core import environment_variables as env
from loom_otel.core.exceptions import LoomOtelError
from loom_otel.core.policy import load_policy
from loom_otel.core.stores import Retention

__all__ = ["register", "retention_settings", "run"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``retain``."""
    parser = subparsers.add_parser(
        "retain",
        help="apply the retention policy once (for cron)",
        description="Erase the reasoning of every execution whose newest capture is older than the retention "
        f"(--retention, else ${env.LOOM_OTEL_RETENTION}), each with a chained tombstone naming the policy. "
        "Executions already erased are left alone, so running it again adds nothing.",
    )
    parser.add_argument("--retention", default=None, help="30d, 12h, 90m, 2w, or none")
    parser.add_argument(
        "--policy", default=None, help=f"policy TOML whose tenants' retention wins (default: ${env.LOOM_OTEL_POLICY})"
    )
    parser.add_argument("--store", default=None, help=f"store URL (default: ${env.LOOM_OTEL_REASONING_STORE})")
    parser.add_argument(
        "--journal",
        default=None,
        help=f"journal directory (default: ${env.LOOM_OTEL_AUDIT_JOURNAL}, else beside a file store)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        retention, tenants = retention_settings(args.retention, args.policy)
        store = open_store(args.store)
        journal = journal_of(args.journal, store)
        store = with_tenant_stores(store, args.policy)  # a tenant's blobs are erased in its own store
    except LoomOtelError as exc:
        print(f"loom-otel retain: {exc}", file=err)
        return EXIT_USAGE
    said_none = args.retention is not None or os.environ.get(env.LOOM_OTEL_RETENTION) is not None
    if retention is None and not tenants and said_none:
        print("retention none: everything is kept; nothing erased", file=out)
        return EXIT_OK
    if retention is None and not tenants:
        print(
            f"loom-otel retain: no retention: pass --retention 30d, set {env.LOOM_OTEL_RETENTION}, or give "
            "tenants a retention in the policy file",
            file=err,
        )
        return EXIT_USAGE
    if not journal.is_dir():
        print(f"loom-otel retain: no journal at {str(journal)!r}: nothing was captured there", file=err)
        return EXIT_USAGE
    try:
        results = apply_retention(
            journal, store, default=retention, tenants=tenants, journal=journal, progress=Progress(err), local=True
        )
    except (LoomOtelError, OSError) as exc:
        print(f"loom-otel retain: the store or the journal failed ({type(exc).__name__}: {exc})", file=err)
        return EXIT_FAILED
    said = "none" if retention is None else retention.text
    if args.json:
        payload = {
            "retention": said,
            "tenants": {name: "none" if r is None else r.text for name, r in tenants.items()},
            "executions_erased": len(results),
            "blobs_removed": sum(r.blobs_removed for r in results),
        }
        print(json.dumps(payload), file=out)
    else:
        blobs = sum(r.blobs_removed for r in results)
        print(
            f"retention {said}{_per_tenant(tenants)}: erased {len(results)} execution(s), "
            f"{blobs} blob(s), from {store!r}",
            file=out,
        )
    return EXIT_OK


def retention_settings(
    retention: str | None, policy: str | None
) -> tuple[Retention | None, dict[str, Retention | None]]:
    """The default retention (``retention``, else ``LOOM_OTEL_RETENTION``) and each tenant's own from the
    policy file (``policy``, else ``LOOM_OTEL_POLICY``); ``ReasoningConfigError`` naming a bad one."""
    setting = retention if retention is not None else os.environ.get(env.LOOM_OTEL_RETENTION)
    named_by = "--retention" if retention is not None else env.LOOM_OTEL_RETENTION
    default = None if setting is None else parse_retention(setting, named_by=named_by)
    path = policy or os.environ.get(env.LOOM_OTEL_POLICY)
    return default, (load_policy(path).retentions() if path else {})


def _per_tenant(tenants: dict[str, Retention | None]) -> str:
    shown = ", ".join(f"{name} {'none' if r is None else r.text}" for name, r in sorted(tenants.items()))
    return f" (per tenant: {shown})" if shown else ""
