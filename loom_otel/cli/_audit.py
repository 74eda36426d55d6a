"""``loom-otel audit show``: the reasoning one execution captured, step by step.

A table per step (attempt, part, kind, status, size, digest prefix, provider, model); readable text
only with ``--text``, each part fenced as untrusted model output. Exit codes: 0 read and intact,
1 some part reads ``digest-mismatch``, 2 a usage or configuration error, 3 no capture records found.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Final, TextIO

from loom_otel.audit._read import AttemptReading, PartStatus, ReasoningReading, read_reasoning
from loom_otel.audit._records import iter_captures
from loom_otel.cli._table import render_table
from loom_otel.core import environment_variables as env
from loom_otel.core._config import default_journal_dir
from loom_otel.core._file_store import FileReasoningStore
from loom_otel.core._store import ReasoningStore, store_from_uri
from loom_otel.core.exceptions import LoomOtelError

__all__ = ["register", "run_show"]

EXIT_OK: Final = 0
EXIT_MISMATCH: Final = 1
EXIT_USAGE: Final = 2
EXIT_NOT_FOUND: Final = 3
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``audit`` (with ``show``)."""
    parser = subparsers.add_parser("audit", help="read captured reasoning back for audit")
    commands = parser.add_subparsers(dest="audit_command", required=True, metavar="COMMAND")
    show = commands.add_parser(
        "show",
        help="show one execution's reasoning, step by step",
        description="A table per step: kind, status (ok, redacted, erased, digest-mismatch, empty, not-kept), "
        "size, digest prefix, provider, model, attempt. Readable text only with --text, fenced as untrusted "
        "model output. Exit 0 intact, 1 digest mismatch, 2 usage error, 3 nothing found.",
    )
    show.add_argument("--execution", required=True, help="execution id")
    show.add_argument("--step", default=None, help="only this step id")
    show.add_argument("--tenant", default=None, help="tenant the execution ran under (default: none)")
    show.add_argument("--text", action="store_true", help="also print readable text (untrusted model output)")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.add_argument(
        "--journal",
        default=None,
        help=f"journal directory or collector file (default: ${env.LOOM_OTEL_AUDIT_JOURNAL}, the store's "
        "journal, or the user's state directory)",
    )
    show.add_argument("--store", default=None, help=f"store URL (default: ${env.LOOM_OTEL_REASONING_STORE})")
    show.set_defaults(func=run_show)


def clean(text: str) -> str:
    """Text safe to print on a terminal: control and bidi characters shown as U+FFFD."""
    return _CONTROL.sub("\ufffd", text)


def open_store(url: str | None) -> ReasoningStore:
    """The store named on the command line or in the environment (``ReasoningConfigError`` if none)."""
    from loom_otel.core.exceptions import ReasoningConfigError

    url = url or os.environ.get(env.LOOM_OTEL_REASONING_STORE) or None
    if url is None:
        raise ReasoningConfigError(f"no reasoning store: pass --store URL or set {env.LOOM_OTEL_REASONING_STORE}")
    return store_from_uri(url, fsync=False)


def journal_of(setting: str | None, store: ReasoningStore) -> Path:
    setting = setting or os.environ.get(env.LOOM_OTEL_AUDIT_JOURNAL) or None
    if setting is not None:
        return Path(setting).expanduser()
    if isinstance(store, FileReasoningStore):
        return store.root / "journal"
    return default_journal_dir()


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
                row = (label, part.index, part.kind, part.status, part.size, digest, attempt.provider, _model(attempt))
                rows.append(tuple(clean(str(c)) for c in row))
        headers = ("attempt", "#", "kind", "status", "size", "digest", "provider", "model")
        print(render_table(headers, rows), file=out)
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


def _json(reading: ReasoningReading, *, text: bool) -> dict[str, object]:
    steps = []
    for step in reading.steps:
        attempts = []
        for a in step.attempts:
            parts = []
            for p in a.parts:
                entry: dict[str, object] = {
                    "index": p.index,
                    "kind": p.kind.value,
                    "status": p.status.value,
                    "size": p.size,
                    "digest": p.digest,
                    "ref": p.ref,
                }
                if text and p.text is not None:
                    entry["text"] = p.text.text
                    entry["untrusted_origin"] = p.text.origin
                parts.append(entry)
            attempts.append(
                {
                    "attempt": a.attempt,
                    "received": a.received,
                    "provider": a.provider,
                    "request_model": a.request_model,
                    "response_model": a.response_model,
                    "origin": a.origin,
                    "seq": a.seq,
                    "time": a.time,
                    "parts": parts,
                }
            )
        steps.append({"step_id": step.step_id, "attempts": attempts})
    return {"execution_id": reading.execution_id, "tenant": reading.tenant, "steps": steps}


def _tenants_with(source: Path, execution_id: str) -> list[str]:
    found = {r.tenant for r in iter_captures(source) if r.execution_id == execution_id}
    return sorted("(none)" if t is None else t for t in found)


def run_show(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        store = open_store(args.store)
        source = journal_of(args.journal, store)
        if not source.exists():
            print(f"loom-otel audit show: no journal at {str(source)!r}", file=err)
            return EXIT_USAGE
        reading = read_reasoning(source, store, execution_id=args.execution, step_id=args.step, tenant=args.tenant)
    except (LoomOtelError, OSError) as exc:
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
        json.dump(_json(reading, text=args.text), out, indent=2)
        print(file=out)
    else:
        _table(reading, text=args.text, out=out)
    mismatch = any(p.status is PartStatus.DIGEST_MISMATCH for p in reading.parts)
    return EXIT_MISMATCH if mismatch else EXIT_OK
