"""``loom-otel``: demo, audit, verify, erase, simulate, keygen, ... (one module per command)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Final

__all__ = ["main"]

# Each module defines ``register(subparsers)``; the parser it adds sets ``func(args) -> int``.
COMMANDS: Final = (
    "loom_otel.cli._audit",
    "loom_otel.cli._demo",
    "loom_otel.cli._erase",
    "loom_otel.cli._forward",
    "loom_otel.cli._keygen",
    "loom_otel.cli._retain",
    "loom_otel.cli._serve",
    "loom_otel.cli._simulate",
    "loom_otel.cli._tail",
    "loom_otel.cli._verify",
)


def _version() -> str:
    """The installed distribution's version (``pyproject.toml``)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("loom-otel")
    except PackageNotFoundError:
        return "(not installed as a distribution)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loom-otel", description="Model reasoning as audit evidence, OpenTelemetry-natively."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


EXIT_INTERRUPTED: Final = 130
EXIT_CLOSED_PIPE: Final = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader went away


def _run(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # --help or a usage error: argparse has printed what it had to
        return stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 2
    code: int = args.func(args)
    return code


def _discard_stdout() -> None:
    """Point the stdout descriptor at /dev/null, so the interpreter's exit flush has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file descriptor (captured, replaced, closed)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. A reader that goes away (``loom-otel audit show ... | head``) ends the command
    quietly with exit code 141, whichever command was writing; Ctrl-C ends it with 130."""
    try:
        code = _run(argv)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit flush
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_CLOSED_PIPE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return code


if __name__ == "__main__":
    sys.exit(main())
