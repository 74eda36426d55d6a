"""``loom-otel forward [JOURNAL]``: deliver what crashed processes left in a journal directory.

Sends every record of a dead chain (no writer holds its lock) that its outbox cursor does not show
as delivered, through the chained exporter's inner exporter (``--inner`` or
``LOOM_OTEL_CHAIN_INNER``; the OTLP exporters read ``OTEL_EXPORTER_OTLP_*``), retrying with backoff
until ``--timeout``. A named path that is not a journal directory (missing, a file, a directory with no
chain in it) is an error. Exit codes: 0 everything delivered, 1 something is still owed, 2 usage
error or not a journal.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from loom_otel.core import environment_variables as env
from loom_otel.core.exceptions import LoomOtelError, ReasoningConfigError
from loom_otel.core.journal import all_segments
from loom_otel.core.runtime import current_runtime

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``forward``."""
    parser = subparsers.add_parser(
        "forward",
        help="deliver the audit records crashed processes left behind",
        description="Resend, from the journal, every record of a dead process's chain that was not "
        "acknowledged downstream (at least once; duplicates are identical).",
    )
    parser.add_argument(
        "journal", nargs="?", default=None, help=f"journal directory (default: ${env.LOOM_OTEL_AUDIT_JOURNAL})"
    )
    parser.add_argument(
        "--inner",
        choices=("otlp_proto_http", "otlp_proto_grpc", "console", "none"),
        default=None,
        help=f"exporter to send through (default: ${env.LOOM_OTEL_CHAIN_INNER} or otlp_proto_http)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to keep retrying (default 60)")
    parser.set_defaults(func=run)


def _not_a_journal(directory: Path) -> str | None:
    """Why ``directory`` is not a journal directory (``<dir>/<origin>/<n>.jsonl``), or ``None``."""
    if not directory.exists():
        return "it does not exist"
    if not directory.is_dir():
        return "it is a file"
    if not all_segments(directory):
        return "it holds no journal chain (<origin>/<segment>.jsonl)"
    return None


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    from loom_otel.exporters.chain._exporter import ChainedSpanExporter
    from loom_otel.exporters.chain._inner import inner_from_environment
    from loom_otel.exporters.chain._logs import beside, logs_from_environment

    try:  # a configuration error first: it holds whatever the journal
        inner = inner_from_environment(args.inner)
    except ReasoningConfigError as exc:
        print(f"loom-otel forward: {exc}", file=err)
        return 2
    if args.journal is not None:
        directory = Path(args.journal).expanduser().absolute()
        why = _not_a_journal(directory)
        if why is not None:
            print(f"loom-otel forward: {str(directory)!r} is not a journal directory: {why}", file=err)
            return 2
    else:
        try:
            directory = current_runtime().journal_dir
        except LoomOtelError as exc:
            print(f"loom-otel forward: {exc}", file=err)
            return 2
        if not directory.exists():
            out.write(f"nothing to forward: no journal at {directory} (the default; pass JOURNAL to name one)\n")
            return 0
    exporter = ChainedSpanExporter(inner, journal=directory, logs=beside(inner, logs_from_environment(args.inner)))
    try:
        delivered = exporter.forward(timeout_millis=int(args.timeout * 1000))
    finally:
        exporter.shutdown(timeout_millis=0)
    if delivered:
        out.write(f"forwarded: every record of the dead chains in {directory} is delivered\n")
        return 0
    print("loom-otel forward: timed out; records are still owed (run it again)", file=err)
    return 1
