"""``loom-otel audit list`` and ``audit show``: the executions a journal holds, and the reasoning one
execution captured, step by step.

``list``: one row per execution, newest first (last capture, execution, tenant, calls, steps, parts,
statuses, providers). ``show``: a table per step (attempt, part, kind, status, standing, size, digest
prefix, provider, model); readable text only with ``--text``, each part fenced as untrusted model output.
A record's standing (``signed``, ``chained``, ``unproven``) is judged with the keys of ``--trust`` and
of ``LOOM_OTEL_CHECKPOINT_KEY`` (``audit/_standing``).
Exit codes: 0 read and intact, 1 some part reads ``digest-mismatch``, 2 a usage or configuration
error, 3 no capture records found.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Final, TextIO

from loom_otel.audit._captures import iter_captures
from loom_otel.audit._document import reading_document
from loom_otel.audit._executions import ANY_TENANT, STORED, ExecutionSummary, list_executions
from loom_otel.audit._locations import journal_of
from loom_otel.audit._read import AttemptReading, PartStatus, ReasoningReading, read_reasoning
from loom_otel.audit._standing import Standings, trusted_keys
from loom_otel.cli._store_args import at_least_one, open_store, parse_since, store_url, with_tenant_stores
from loom_otel.cli._table import render_table
from loom_otel.cli._terminal import clean
from loom_otel.core import environment_variables as env
from loom_otel.core.exceptions import LoomOtelError
from loom_otel.core.stores import describe

__all__ = ["register", "run_list", "run_reads", "run_show"]

EXIT_OK: Final = 0
EXIT_MISMATCH: Final = 1
EXIT_USAGE: Final = 2
EXIT_NOT_FOUND: Final = 3
_JOURNAL_HELP: Final = (
    f"journal directory or collector file (default: ${env.LOOM_OTEL_AUDIT_JOURNAL}, the store's journal, "
    "or the user's state directory)"
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``audit`` (with ``list`` and ``show``, and ``verify`` and ``erase`` as aliases of the
    top-level commands)."""
    parser = subparsers.add_parser("audit", help="list executions and read captured reasoning back for audit")
    commands = parser.add_subparsers(dest="audit_command", required=True, metavar="COMMAND")
    listing = commands.add_parser(
        "list",
        help="list the executions a journal holds, newest first",
        description="One row per execution, newest first: its last capture (UTC), tenant, model calls, steps, "
        "parts and their statuses. Parts kept in the store read as 'stored' unless a store is given "
        "(--store or $LOOM_OTEL_REASONING_STORE), which checks each one (ok, erased, digest-mismatch). "
        "Exit 0 listed and intact, 1 digest mismatch, 2 usage error, 3 nothing found.",
    )
    listing.add_argument("--tenant", default=None, help="only this tenant's executions (default: every tenant)")
    listing.add_argument(
        "--since",
        type=parse_since,
        default=None,
        metavar="WHEN",
        help="only executions with a capture since WHEN: an ISO 8601 time (UTC unless it has an offset) "
        "or a duration ago such as 90s, 15m, 1h, 2d, 1w",
    )
    listing.add_argument(
        "--limit", type=at_least_one, default=None, metavar="N", help="only the newest N executions (N >= 1)"
    )
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.add_argument("--journal", default=None, help=_JOURNAL_HELP)
    listing.add_argument(
        "--store",
        default=None,
        help=f"store URL: check each stored part (default: ${env.LOOM_OTEL_REASONING_STORE})",
    )
    listing.set_defaults(func=run_list)
    show = commands.add_parser(
        "show",
        help="show one execution's reasoning, step by step",
        description="A table per step: kind, status (ok, redacted, erased, digest-mismatch, empty, not-kept), "
        "standing (signed, chained, unproven), size, digest prefix, provider, model, attempt. Readable text "
        "only with --text, fenced as untrusted model output. Exit 0 intact, 1 digest mismatch, 2 usage error, "
        "3 nothing found.",
    )
    show.add_argument("--execution", required=True, help="execution id")
    show.add_argument("--step", default=None, help="only this step id")
    show.add_argument("--tenant", default=None, help="tenant the execution ran under (default: none)")
    show.add_argument("--text", action="store_true", help="also print readable text (untrusted model output)")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.add_argument("--journal", default=None, help=_JOURNAL_HELP)
    show.add_argument(
        "--store",
        default=None,
        help=f"store URL: check each stored part; needed by --text (default: ${env.LOOM_OTEL_REASONING_STORE})",
    )
    show.add_argument(
        "--trust",
        action="append",
        default=[],
        metavar="KEYFILE",
        help="a public (or private) key file whose signed checkpoints prove records (repeatable); "
        f"${env.LOOM_OTEL_CHECKPOINT_KEY}'s key is trusted too. Without a trusted key every record is unproven "
        "and no blob that is gone reads erased",
    )
    show.set_defaults(func=run_show)
    reads = commands.add_parser(
        "reads",
        help="list who read which reasoning through loom-otel serve",
        description="One row per read record (loom.reasoning.read) of the viewer's journal: time (UTC), reader, "
        "tenant, execution, ref, digest prefix, outcome (a part's status, or not-found). `loom-otel verify` "
        "checks their chain. Exit 0 listed, 2 usage error, 3 nothing found.",
    )
    reads.add_argument("--journal", default=None, help="the viewer's reads journal (default: as for show)")
    reads.add_argument("--reader", default=None, help="only this reader's reads")
    reads.add_argument("--execution", default=None, help="only reads of this execution")
    reads.add_argument("--tenant", default=None, help="only reads in this tenant")
    reads.add_argument("--json", action="store_true", help="machine-readable output")
    reads.add_argument(
        "--trust", action="append", default=[], metavar="KEYFILE", help="as for show: keys that prove records"
    )
    reads.set_defaults(func=run_reads)

    from loom_otel.cli import _bundle, _erase, _verify  # `audit verify` and `audit erase` are the top-level commands

    _verify.register(commands)
    _erase.register(commands)
    _bundle.register(commands)


def _model(attempt: AttemptReading) -> str:
    if attempt.response_model and attempt.response_model != attempt.request_model:
        return f"{attempt.request_model} -> {attempt.response_model}"
    return attempt.request_model


def _table(reading: ReasoningReading, *, text: bool, out: TextIO) -> None:
    tenant = f" (tenant {clean(reading.tenant)})" if reading.tenant is not None else ""
    parts = reading.parts
    print(f"execution {clean(reading.execution_id)}{tenant}: {len(reading.steps)} steps, {len(parts)} parts", file=out)
    for step in reading.steps:
        print(f"\nstep {clean(step.step_id)}", file=out)
        rows = []
        for attempt in step.attempts:
            label = f"{attempt.attempt} ({'received' if attempt.received else 'superseded'})"
            for part in attempt.parts:
                digest = part.digest[:12] if part.digest else "-"
                row = (
                    label,
                    part.index,
                    part.kind,
                    part.status,
                    attempt.standing,
                    part.size,
                    digest,
                    attempt.provider,
                    _model(attempt),
                )
                rows.append(tuple(clean(str(c)) for c in row))
        headers = ("attempt", "#", "kind", "status", "standing", "size", "digest", "provider", "model")
        print(render_table(headers, rows), file=out)
        for attempt in step.attempts:
            if attempt.layout:
                print(f"attempt {attempt.attempt}: {clean(describe(attempt.layout))}", file=out)
        erasures = (p.erasure for a in step.attempts for p in a.parts if p.erasure is not None)
        for tombstone in dict.fromkeys(erasures):
            said = f"erased {_when(tombstone.time)} by {clean(tombstone.by)}: {clean(tombstone.reason)}"
            print(f"{said} ({tombstone.standing})", file=out)
        if text:
            for attempt in step.attempts:
                for part in attempt.parts:
                    if part.text is not None:
                        print(f"\n-- attempt {attempt.attempt} part {part.index} ({part.kind}) --", file=out)
                        print(clean(part.text.fenced()), file=out)
    counts: dict[str, int] = {}
    for part in parts:
        counts[part.status.value] = counts.get(part.status.value, 0) + 1
    print("\n" + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())), file=out)


def _not_checked(out: TextIO) -> None:
    print(
        f"'{STORED}' parts are in the store, not checked: pass --store URL "
        f"(or set {env.LOOM_OTEL_REASONING_STORE}) to read and check them",
        file=out,
    )


def _tenants_with(source: Path, execution_id: str) -> list[str]:
    found = {r.tenant for r in iter_captures(source) if r.execution_id == execution_id}
    return sorted("(none)" if t is None else t for t in found)


def run_show(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        store = open_store(args.store) if args.text or store_url(args.store) else None
        source = journal_of(args.journal, store)
        store = with_tenant_stores(store) if store is not None else None  # a tenant's blobs: its own store
        if not source.exists():
            print(f"loom-otel audit show: no journal at {str(source)!r}", file=err)
            return EXIT_USAGE
        trust = trusted_keys(getattr(args, "trust", None) or ())
        reading = read_reasoning(
            source, store, execution_id=args.execution, step_id=args.step, tenant=args.tenant, trust=trust
        )
    except (LoomOtelError, OSError, ValueError) as exc:
        print(f"loom-otel audit show: {exc}", file=err)
        return EXIT_USAGE
    if not reading.steps:
        where = f" step {clean(args.step)!r} of" if args.step else ""
        print(f"loom-otel audit show: no reasoning captured for{where} execution {clean(args.execution)!r}", file=err)
        tenants = _tenants_with(source, args.execution)
        if tenants and args.step is None:
            print(f"  records exist under tenant(s): {clean(', '.join(tenants))} (pass --tenant)", file=err)
        return EXIT_NOT_FOUND
    if args.json:
        json.dump(reading_document(reading, text=args.text), out, indent=2)
        print(file=out)
    else:
        _table(reading, text=args.text, out=out)
        if any(p.status is PartStatus.STORED for p in reading.parts):
            _not_checked(out)
        if not trust and any(p.status is PartStatus.MISSING for p in reading.parts):
            _nothing_proven(out)
    mismatch = any(p.status is PartStatus.DIGEST_MISMATCH for p in reading.parts)
    return EXIT_MISMATCH if mismatch else EXIT_OK


def _nothing_proven(out: TextIO) -> None:
    print(
        "no key is trusted, so every record is unproven and no erasure record can turn `missing` into "
        f"`erased` (anyone who can append a line could write one): set {env.LOOM_OTEL_CHECKPOINT_KEY} to the "
        "key that signed the journal's checkpoints, or pass --trust KEYFILE",
        file=out,
    )


def _when(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _statuses(summary: ExecutionSummary) -> str:
    return ", ".join(f"{n} {status}" for status, n in summary.statuses)


def _list_json(summary: ExecutionSummary) -> dict[str, object]:
    return {
        "execution_id": summary.execution_id,
        "tenant": summary.tenant,
        "first": dt.datetime.fromtimestamp(summary.first / 1e9, dt.UTC).isoformat(),
        "last": dt.datetime.fromtimestamp(summary.last / 1e9, dt.UTC).isoformat(),
        "first_unix_nano": summary.first,
        "last_unix_nano": summary.last,
        "calls": summary.calls,
        "steps": summary.steps,
        "parts": summary.parts,
        "statuses": dict(summary.statuses),
        "statuses_checked": summary.checked,
        "providers": list(summary.providers),
    }


def run_list(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        store = open_store(args.store) if store_url(args.store) else None
        source = journal_of(args.journal, store)
        store = with_tenant_stores(store) if store is not None else None
        if not source.exists():
            print(f"loom-otel audit list: no journal at {str(source)!r}", file=err)
            return EXIT_USAGE
        tenant = ANY_TENANT if args.tenant is None else args.tenant
        summaries = list_executions(source, store, tenant=tenant, since=args.since, limit=args.limit)
    except (LoomOtelError, OSError) as exc:
        print(f"loom-otel audit list: {exc}", file=err)
        return EXIT_USAGE
    if args.json:
        json.dump([_list_json(s) for s in summaries], out, indent=2)
        print(file=out)
    elif summaries:
        headers = ("last capture", "execution", "tenant", "calls", "steps", "parts", "statuses", "providers")
        rows = [
            tuple(
                clean(str(c))
                for c in (
                    _when(s.last),
                    s.execution_id,
                    "-" if s.tenant is None else s.tenant,
                    s.calls,
                    s.steps,
                    s.parts,
                    _statuses(s),
                    ", ".join(s.providers),
                )
            )
            for s in summaries
        ]
        print(render_table(headers, rows), file=out)
        print(f"\n{len(summaries)} execution(s) in {source}", file=out)
        if any(status == STORED for s in summaries for status, _ in s.statuses):
            _not_checked(out)
    if not summaries:
        print(f"loom-otel audit list: no capture records in {str(source)!r} match", file=err)
        return EXIT_NOT_FOUND
    return EXIT_OK if all(s.intact for s in summaries) else EXIT_MISMATCH


def run_reads(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    from loom_otel.viewer._reads import read_records

    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    source = journal_of(args.journal, None)
    if not source.is_dir():
        print(f"loom-otel audit reads: no journal directory at {str(source)!r}", file=err)
        return EXIT_USAGE
    found = [
        r
        for r in read_records(source)
        if (args.reader is None or r.reader == args.reader)
        and (args.execution is None or r.execution_id == args.execution)
        and (args.tenant is None or r.tenant == args.tenant)
    ]
    found.sort(key=lambda r: (r.time, r.origin, r.seq))
    try:
        standings = Standings(source, trusted_keys(getattr(args, "trust", None) or ()))
    except (OSError, ValueError) as exc:
        print(f"loom-otel audit reads: --trust: not an Ed25519 key file ({exc})", file=err)
        return EXIT_USAGE
    standing = {(r.origin, r.seq): standings.of(r.origin, r.seq, r.record_hash).value for r in found}
    if args.json:
        keys = ("time", "reader", "tenant", "execution_id", "ref", "digest", "outcome", "origin", "seq")
        json.dump(
            [{**{k: getattr(r, k) for k in keys}, "standing": standing[(r.origin, r.seq)]} for r in found],
            out,
            indent=2,
        )
        print(file=out)
    elif found:
        headers = ("time", "reader", "tenant", "execution", "ref", "digest", "outcome", "standing")
        rows = [
            tuple(
                clean(str(c))
                for c in (
                    _when(r.time),
                    r.reader,
                    r.tenant or "-",
                    r.execution_id,
                    r.ref or "-",
                    r.digest[:12] or "-",
                    r.outcome,
                    standing[(r.origin, r.seq)],
                )
            )
            for r in found
        ]
        print(render_table(headers, rows), file=out)
        print(f"\n{len(found)} read(s) in {source}", file=out)
    if not found:
        print(f"loom-otel audit reads: no read records in {str(source)!r} match", file=err)
        return EXIT_NOT_FOUND
    return EXIT_OK
