"""``loom-otel verify PATH [--against WITNESS]``: check a journal directory or a collector ``file``
exporter's OTLP JSON, and cross-check it with its witness (the archive of a journal, or the journal
of an archive).

Prints a table per origin (records, gaps, modified, reordered, duplicates, checkpoints, unanchored
tail, torn tail), the located problems and what the witness disagrees with, or ``--json``. The OK
line says what could not be checked (no witness; signatures not checked against a trusted key).
Origin names and every other string read from the inputs are cleaned of terminal controls.
``--store URL`` also reads every blob the capture records name and checks its digest; without it
the OK line says that the store was not checked. Progress goes to stderr on large inputs. Exit
codes: 0 verified, 1 problems found (including an unanchored tail, a disagreement with the witness,
a blob that is not what its record says or is gone without a tombstone), 2 unreadable source or store.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Final, TextIO

from loom_otel.audit._store_check import BlobProblem, StoreCheck, check_store
from loom_otel.audit._verify import CrossCheck, OriginReport, VerifyReport, verify
from loom_otel.cli._bundle import verify_bundle, verify_consistency
from loom_otel.cli._store_args import open_store, with_tenant_stores
from loom_otel.cli._terminal import clean
from loom_otel.core.exceptions import LoomOtelError
from loom_otel.core.journal import load_public_key

__all__ = ["register", "run"]

_SHOWN = 10


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``verify``."""
    parser = subparsers.add_parser(
        "verify",
        help="verify the audit chain in a journal or a collector file export",
        description="Walk every chain (origin) in seq order and report gaps, modified, reordered and "
        "duplicate records, checkpoint signatures and the unanchored tail. A journal alone cannot show a "
        "tail cut back to a checkpoint or a deleted origin: --against cross-checks it with the collector's "
        "archive.",
    )
    parser.add_argument("path", metavar="PATH", nargs="?", help="journal directory, or OTLP JSON lines file/directory")
    parser.add_argument(
        "--bundle", metavar="FILE", help="check an evidence bundle (`audit export`) offline; with --key"
    )
    parser.add_argument(
        "--consistency",
        nargs=2,
        metavar=("OLD", "NEW"),
        help="check that a log only grew between two checkpoint notes (files); with --proof and --key",
    )
    parser.add_argument("--proof", metavar="FILE", help="the consistency proof (`loom-otel audit consistency`)")
    parser.add_argument(
        "--against",
        default=None,
        metavar="WITNESS",
        help="cross-check with the other copy of the same chains: the collector archive (OTLP JSON lines "
        "file/directory) of a journal, or the journal of an archive",
    )
    parser.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="PEM",
        help="trusted checkpoint public key (repeatable; `loom-otel keygen` prints one); implies --require-signed",
    )
    parser.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="also read every blob the capture records name from this reasoning store and check its digest",
    )
    parser.add_argument("--require-signed", action="store_true", help="unsigned checkpoints are a failure")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    if args.bundle is not None:
        return verify_bundle(args, out, err)
    if args.consistency is not None:
        return verify_consistency(args, out, err)
    if args.path is None:
        print("loom-otel verify: give a PATH, --bundle FILE or --consistency OLD NEW", file=err)
        return 2
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
        report = verify(
            args.path, public_keys=keys, require_signed=args.require_signed, progress=progress, against=args.against
        )
    except OSError as exc:
        where = clean(str(exc.filename or args.path))
        print(f"\nloom-otel verify: cannot read {where} ({exc.strerror or type(exc).__name__})", file=err)
        return 2
    if time.monotonic() - started > 1.0:
        print(file=err)
    blobs: StoreCheck | None = None
    if args.store is not None:
        try:
            blobs = check_store(args.path, with_tenant_stores(open_store(args.store)))
        except (LoomOtelError, OSError) as exc:
            print(f"loom-otel verify: cannot check the store {clean(args.store)!r}: {clean(str(exc))}", file=err)
            return 2
    ok = report.ok and (blobs is None or not (blobs.mismatched or blobs.missing))
    if args.json:
        document = report.to_dict()
        document["store"] = None if blobs is None else _store_dict(blobs)
        document["ok"] = ok
        json.dump(document, out, indent=2)
        out.write("\n")
    else:
        _table(report, out, blobs)
    return 0 if ok else 1


_NO_STORE: Final = "the reasoning store (the blobs the records name: pass --store URL)"


def _store_dict(blobs: StoreCheck) -> dict[str, object]:
    def where(problems: tuple[BlobProblem, ...]) -> list[dict[str, object]]:
        return [
            {"origin": p.origin, "seq": p.seq, "execution_id": p.execution_id, "tenant": p.tenant, "part": p.index}
            for p in problems
        ]

    return {
        "parts": blobs.parts,
        "ok": blobs.ok,
        "mismatched": where(blobs.mismatched),
        "erased": where(blobs.erased),
        "missing": where(blobs.missing),
        "gaps": [{"pack": g.pack, "offset": g.offset, "length": g.length} for g in blobs.gaps],
    }


def _store_lines(blobs: StoreCheck) -> list[str]:
    lines = [
        f"store: {blobs.parts} part(s) named by the records: {blobs.ok} whole, {len(blobs.mismatched)} "
        f"digest-mismatch, {len(blobs.erased)} erased, {len(blobs.missing)} missing"
    ]
    for label, problems in (
        ("digest-mismatch", blobs.mismatched),
        ("erased (a tombstone records it)", blobs.erased),
        ("missing (gone without a tombstone: lost evidence)", blobs.missing),
    ):
        shown = [f"{p.origin} seq {p.seq} part {p.index} (execution {p.execution_id})" for p in problems[:_SHOWN]]
        if shown:
            lines.append(f"store: {label}: {'; '.join(shown)}{'; ...' if len(problems) > _SHOWN else ''}")
    if blobs.gaps:
        shown = [f"{g.pack} at {g.offset} ({g.length} bytes)" for g in blobs.gaps[:_SHOWN]]
        lines.append(
            f"store: {len(blobs.gaps)} gap(s) in packs (a write that failed: its capture failed closed, no record "
            f"names it; or a torn tail): {'; '.join(shown)}{'; ...' if len(blobs.gaps) > _SHOWN else ''}"
        )
    return lines


def _locations(values: tuple[object, ...]) -> str:
    shown = ", ".join(str(v) for v in values[:_SHOWN])
    return shown + (", ..." if len(values) > _SHOWN else "")


def _table(report: VerifyReport, out: TextIO, blobs: StoreCheck | None = None) -> None:
    lines = [f"{report.kind} {report.source}: {report.records} records, {len(report.origins)} origin(s)"]
    header = ("origin", "records", "seq", "gaps", "modified", "reordered", "dup ok", "dup bad", "ckpts", "unanchored")
    rows = [header, *(_row(o) for o in report.origins)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
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
                lines.append(f"{origin.origin}: {label}: seq {_locations(values)}")
        if origin.signed_checkpoints and origin.unsigned_checkpoints:
            lines.append(
                f"{origin.origin}: {origin.signed_checkpoints} signed and {origin.unsigned_checkpoints} unsigned "
                "checkpoints (signatures stripped?)"
            )
        if len(origin.signing_keys) > 1:
            lines.append(f"{origin.origin}: checkpoints signed by {len(origin.signing_keys)} keys (re-signed?)")
        if origin.duplicates_cut:
            lines.append(
                f"{origin.origin}: {origin.duplicates_cut} copies cut short by an attribute length limit "
                "(OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT); their whole copies verify"
            )
        if origin.torn:
            lines.append(
                f"{origin.origin}: torn tail: {origin.torn} bytes after seq {origin.last_seq} (writer crashed)"
            )
    if report.malformed:
        lines.append(f"malformed lines or events: {report.malformed}")
    if report.witness is not None:
        lines += _witness(report.witness)
    problems = list(report.problems)
    limits = list(report.limits)
    if blobs is None:
        limits.append(_NO_STORE)
    else:
        lines += _store_lines(blobs)
        if blobs.mismatched:
            problems.append(f"{len(blobs.mismatched)} blob(s) in the store differ from their records")
        if blobs.missing:
            problems.append(f"{len(blobs.missing)} blob(s) are gone from the store without a tombstone")
    if not problems:
        whole = "every chain is whole and anchored"
        if blobs is not None:
            whole += f", and the {blobs.ok} blob(s) the records name read back whole"
            if blobs.erased:
                whole += f" ({len(blobs.erased)} erased, each with its tombstone)"
        lines.append(f"OK: {whole}; not checked: {'; '.join(limits)}" if limits else f"OK: {whole}")
    else:
        lines.append(f"FAILED: {'; '.join(problems)}")
    out.write("".join(clean(line) + "\n" for line in lines))


def _witness(check: CrossCheck) -> list[str]:
    lines = [f"witness {check.kind} {check.witness}: {check.records} records"]
    lines += [f"{o}: origin only in the source ({n} records)" for o, n in check.origins_only_in_source]
    lines += [f"{o}: origin only in the witness ({n} records): deleted here?" for o, n in check.origins_only_in_witness]
    lines += [
        f"{o}: local origin ({n} records: reads or erasures kept in the journal, not forwarded): "
        "not expected in the archive"
        for o, n in check.local_origins
    ]
    for label, ranges in (
        ("only in the witness", check.only_in_witness),
        ("only in the source", check.only_in_source),
        ("not yet in the archive (the journal holds it)", check.not_yet_archived),
    ):
        by_origin: dict[str, list[str]] = {}
        for origin, first, last in ranges:
            by_origin.setdefault(origin, []).append(f"{first}..{last}" if first != last else str(first))
        lines += [f"{o}: {label}: seq {_locations(tuple(seqs))}" for o, seqs in by_origin.items()]
    differing: dict[str, list[int]] = {}
    for origin, seq in check.differing:
        differing.setdefault(origin, []).append(seq)
    lines += [f"{o}: differs from the witness: seq {_locations(tuple(seqs))}" for o, seqs in differing.items()]
    lines += [
        f"{origin}: checkpoint seq {seq} of the {holder}: its head contradicts the other"
        for holder, origin, seq in check.contradicted_heads[:_SHOWN]
    ]
    return lines


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
