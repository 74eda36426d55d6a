"""``loom-otel``: demo, audit, verify, erase, simulate, keygen, ... (one module per command)."""

from __future__ import annotations

import argparse
import importlib
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
    "loom_otel.cli._simulate",
    "loom_otel.cli._tail",
    "loom_otel.cli._verify",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loom-otel", description="Model reasoning as audit evidence, OpenTelemetry-natively."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
