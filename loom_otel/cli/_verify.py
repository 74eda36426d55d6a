"""``loom-otel verify PATH``: check a journal directory or a collector ``file`` exporter's OTLP JSON.

Prints a table per origin (records, gaps, modified, reordered, duplicates, checkpoints, unanchored
tail, torn tail) and the located problems, or ``--json``. Progress goes to stderr on large inputs.
Exit codes: 0 verified, 1 problems found (including an unanchored tail), 2 unreadable source.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TextIO

from loom_otel.audit._verify import OriginReport, VerifyReport, verify
from loom_otel.core._checkpoint import load_public_key

__all__ = ["register", "run"]

_SHOWN = 10


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``verify``."""
    parser = subparsers.add_parser(
        "verify",
        help="verify the audit chain in a journal or a collector file export",
        description="Walk every chain (origin) in seq order and report gaps, modified, reordered and "
        "duplicate records, checkpoint signatures and the unanchored tail.",
    )
    parser.add_argument("path", metavar="PATH", help="journal directory, or OTLP JSON lines file/directory")
    parser.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="PEM",
        help="trusted checkpoint public key (repeatable; `loom-otel keygen` prints one)",
    )
    parser.add_argument("--require-signed", action="store_true", help="unsigned checkpoints are a failure")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        keys = [load_public_key(path) for path in args.key]
    except (OSError, ValueError, TypeError) as exc:
        print(f"loom-otel verify: cannot load a --key ({type(exc).__name__})", file=err)
        return 2
    started = time.monotonic()

    def progress(done: int, total: int) -> None:
        if time.monotonic() - started > 1.0 and total:
            print(f"\rverify: {done * 100 // total}% of {total / 1e6:.1f} MB", end="", file=err, flush=True)

    try:
        report = verify(args.path, public_keys=keys, require_signed=args.require_signed, progress=progress)
    except OSError as exc:
        print(f"\nloom-otel verify: cannot read {args.path} ({exc.strerror or type(exc).__name__})", file=err)
        return 2
    if time.monotonic() - started > 1.0:
        print(file=err)
    if args.json:
        json.dump(report.to_dict(), out, indent=2)
        out.write("\n")
    else:
        _table(report, out)
    return 0 if report.ok else 1


def _locations(values: tuple[object, ...]) -> str:
    shown = ", ".join(str(v) for v in values[:_SHOWN])
    return shown + (", ..." if len(values) > _SHOWN else "")


def _table(report: VerifyReport, out: TextIO) -> None:
    out.write(f"{report.kind} {report.source}: {report.records} records, {len(report.origins)} origin(s)\n")
    header = ("origin", "records", "seq", "gaps", "modified", "reordered", "dup ok", "dup bad", "ckpts", "unanchored")
    rows = [header, *(_row(o) for o in report.origins)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() + "\n")
    for origin in report.origins:
        for label, values in (
            ("gaps", tuple(f"{a}..{b}" for a, b in origin.gaps)),
            ("modified", origin.modified),
            ("broken links at", origin.broken_links),
            ("reordered", origin.reordered),
            ("conflicting duplicates", origin.duplicates_conflicting),
            ("bad checkpoint signatures", origin.bad_signatures),
            ("checkpoint mismatches", origin.checkpoint_mismatches),
        ):
            if values:
                out.write(f"{origin.origin}: {label}: seq {_locations(values)}\n")
        if origin.torn:
            out.write(f"{origin.origin}: torn tail: {origin.torn} bytes after seq {origin.last_seq} (writer crashed)\n")
    if report.malformed:
        out.write(f"malformed lines or events: {report.malformed}\n")
    out.write("OK: every chain is whole and anchored\n" if report.ok else f"FAILED: {'; '.join(report.problems)}\n")


def _row(origin: OriginReport) -> tuple[str, ...]:
    unanchored = f"{origin.unanchored[0]}..{origin.unanchored[1]}" if origin.unanchored else "-"
    return (
        origin.origin,
        str(origin.records),
        f"{origin.first_seq}..{origin.last_seq}",
        str(origin.missing),
        str(len(origin.modified) + len(origin.broken_links)),
        str(len(origin.reordered)),
        str(origin.duplicates_identical),
        str(len(origin.duplicates_conflicting)),
        f"{origin.checkpoints - len(origin.bad_signatures)}/{origin.checkpoints}",
        unanchored,
    )
