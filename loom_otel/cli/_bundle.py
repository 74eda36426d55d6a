"""Evidence bundles on the command line: ``audit export`` and ``audit consistency`` write them,
``verify --bundle`` and ``verify --consistency`` check them offline (``audit/_bundle``,
``audit/_bundle_check``, ``audit/_consistency``; the format is docs/evidence-bundles.md).

``audit export`` is run by an operator with access to the store: the bundle holds every text of the
execution. Exit codes: ``audit export`` 0 written, 1 records past the last checkpoint (refused without
``--allow-unanchored``), 2 usage or unreadable journal/store, 3 no record of the execution;
``verify --bundle`` / ``--consistency`` 0 verified, 1 failed (each failure named), 2 unreadable file or key.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Final, TextIO

from loom_otel.audit._bundle import BundleError, NoRecordError, UnanchoredError, export_bundle, write_bundle
from loom_otel.audit._bundle_check import check_bundle
from loom_otel.audit._consistency import ConsistencyError, check_consistency, consistency_document
from loom_otel.audit._locations import journal_of
from loom_otel.audit._tombstones import operator
from loom_otel.cli._store_args import open_store
from loom_otel.cli._terminal import clean
from loom_otel.core.exceptions import LoomOtelError
from loom_otel.core.journal import load_public_key

__all__ = ["register", "run_consistency", "run_export", "verify_bundle", "verify_consistency"]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_NOT_FOUND: Final = 3


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``audit export`` and ``audit consistency``."""
    export = commands.add_parser(
        "export",
        help="write one execution's evidence bundle, for `loom-otel verify --bundle` on another machine",
        description="Write one file holding the execution's capture, tombstone and read records, an inclusion "
        "proof of each in its origin's Merkle tree, the signed checkpoint notes the proofs lead to, and the "
        "texts from the store (checked against their digests; erased ones as their tombstones). It holds no "
        "other execution's data. Exit 0 written, 1 records past the last checkpoint (see --allow-unanchored), "
        "2 usage error, 3 no record of the execution.",
    )
    export.add_argument("--execution", required=True, help="execution id")
    export.add_argument("--tenant", default=None, help="tenant the execution ran under (default: none)")
    export.add_argument("--out", required=True, metavar="FILE", help="where to write the bundle (JSON)")
    export.add_argument(
        "--journal",
        action="append",
        default=[],
        metavar="DIR",
        help="journal directory (repeatable: the viewer's reads journal too; default: as for `audit show`)",
    )
    export.add_argument("--store", default=None, help="store URL (default: $LOOM_OTEL_REASONING_STORE)")
    export.add_argument(
        "--allow-unanchored",
        action="store_true",
        help="write records past their origin's last checkpoint too, listed as unproven (verify then fails)",
    )
    export.set_defaults(func=run_export)
    consistency = commands.add_parser(
        "consistency",
        help="prove that an origin's log only grew between two of its checkpoints",
        description="Write the signed notes of two checkpoints of one origin and the RFC 6962 consistency "
        "proof between them (JSON), for `loom-otel verify --consistency OLD NEW --proof FILE`.",
    )
    consistency.add_argument("--journal", default=None, metavar="DIR", help="journal directory")
    consistency.add_argument("--origin", required=True, help="the origin (chain) of both checkpoints")
    consistency.add_argument("--old", required=True, type=int, metavar="N", help="the old checkpoint's size")
    consistency.add_argument("--new", type=int, default=None, metavar="M", help="the new one's (default: the last)")
    consistency.add_argument("--out", default=None, metavar="FILE", help="write there (default: stdout)")
    consistency.set_defaults(func=run_consistency)


def run_export(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        store = open_store(args.store)
        journals = args.journal or [journal_of(None, store)]
        bundle = export_bundle(
            journals,
            store,
            args.execution,
            args.tenant,
            allow_unanchored=args.allow_unanchored,
            exported_by=operator(),
        )
    except (UnanchoredError, NoRecordError) as exc:
        print(f"loom-otel audit export: {clean(str(exc))}", file=err)
        return EXIT_FAILED if isinstance(exc, UnanchoredError) else EXIT_NOT_FOUND
    except BundleError as exc:
        print(f"loom-otel audit export: {clean(str(exc))}", file=err)
        return EXIT_USAGE
    except (LoomOtelError, OSError) as exc:
        print(f"loom-otel audit export: {clean(str(exc))}", file=err)
        return EXIT_USAGE
    try:
        write_bundle(bundle, args.out)
    except OSError as exc:
        print(
            f"loom-otel audit export: cannot write {clean(args.out)} ({exc.strerror or type(exc).__name__})", file=err
        )
        return EXIT_USAGE
    print(clean(f"wrote {args.out}: {summary(bundle)}"), file=out)
    return EXIT_OK


def summary(bundle: dict[str, object]) -> str:
    """What a bundle holds, in one line."""
    origins, parts, unanchored = (_entries(bundle.get(k)) for k in ("origins", "parts", "unanchored"))
    records = sum(len(_entries(o.get("records"))) for o in origins)
    statuses: dict[str, int] = {}
    for part in parts:
        statuses[part["status"]] = statuses.get(part["status"], 0) + 1
    counted = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) or "none kept"
    line = f"{records} proven record(s) in {len(origins)} origin(s); parts: {counted}"
    if unanchored:
        line += f"; {len(unanchored)} unproven record(s) (past the last checkpoint)"
    return line


def _entries(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def run_consistency(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        document = consistency_document(journal_of(args.journal, None), args.origin, args.old, args.new)
    except (ConsistencyError, OSError, ValueError) as exc:
        print(f"loom-otel audit consistency: {clean(str(exc))}", file=err)
        return EXIT_USAGE
    text = json.dumps(document, indent=1) + "\n"
    if args.out is None:
        out.write(text)
        return EXIT_OK
    try:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        print(f"loom-otel audit consistency: cannot write {clean(args.out)} ({exc.strerror})", file=err)
        return EXIT_USAGE
    return EXIT_OK


def _key(paths: list[str], err: TextIO) -> bytes | None:
    if len(paths) != 1:
        print("loom-otel verify: --bundle and --consistency take one --key (the checkpoints' public key)", file=err)
        return None
    try:
        return bytes.fromhex(load_public_key(paths[0]))
    except (OSError, ValueError, TypeError) as exc:
        print(f"loom-otel verify: cannot load the --key ({type(exc).__name__})", file=err)
        return None


def verify_bundle(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``verify --bundle FILE --key PEM``."""
    key = _key(args.key, err)
    if key is None:
        return EXIT_USAGE
    try:
        with open(args.bundle, encoding="utf-8") as fh:
            bundle = json.load(fh)
    except (OSError, ValueError) as exc:
        print(f"loom-otel verify: cannot read the bundle {clean(args.bundle)} ({type(exc).__name__})", file=err)
        return EXIT_USAGE
    report = check_bundle(bundle, key)
    if args.json:
        document = {
            "ok": report.ok,
            "execution_id": report.execution_id,
            "tenant": report.tenant,
            "origins": report.origins,
            "records": report.records,
            "texts": report.texts,
            "erased": report.erased,
            "problems": report.problems,
        }
        json.dump(document, out, indent=2)
        out.write("\n")
        return EXIT_OK if report.ok else EXIT_FAILED
    tenant = "" if report.tenant is None else f" (tenant {report.tenant})"
    lines = [
        f"bundle {args.bundle}: execution {report.execution_id}{tenant}: {report.records} record(s) in "
        f"{report.origins} origin(s), {report.texts} text(s) checked, {report.erased} erased with their "
        "tombstones"
    ]
    lines += [f"FAILED: {problem}" for problem in report.problems]
    if report.ok:
        lines.append(
            "OK: every record is in its origin's log as a checkpoint signed by the key states; not checked: "
            "that no record of the execution was left out whole (its origin's log or a witness's archive can)"
        )
    elif not report.problems:
        lines.append("FAILED: the bundle holds no record")
    out.write("".join(clean(line) + "\n" for line in lines))
    return EXIT_OK if report.ok else EXIT_FAILED


def verify_consistency(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``verify --consistency OLD NEW --proof FILE --key PEM``."""
    key = _key(args.key, err)
    if key is None:
        return EXIT_USAGE
    if args.proof is None:
        print("loom-otel verify: --consistency needs --proof FILE (from `loom-otel audit consistency`)", file=err)
        return EXIT_USAGE
    try:
        old, new = (Path(path).read_text(encoding="utf-8") for path in args.consistency)
        proof = json.loads(Path(args.proof).read_text(encoding="utf-8"))["proof"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"loom-otel verify: cannot read the checkpoints or the proof ({type(exc).__name__})", file=err)
        return EXIT_USAGE
    try:
        sizes = check_consistency(old, new, proof, key)
    except ConsistencyError as exc:
        print(clean(f"FAILED: {exc}"), file=out)
        return EXIT_FAILED
    print(
        f"OK: the log grew from {sizes[0]} to {sizes[1]} records, keeping the first {sizes[0]} as they were", file=out
    )
    return EXIT_OK
