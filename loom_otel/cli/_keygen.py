"""``loom-otel keygen PATH``: write an Ed25519 private key (PEM, mode 0600) for signed checkpoints.

Prints the public key (PEM) on stdout, so ``loom-otel keygen key.pem > key.pub`` keeps it for
``loom-otel verify --key key.pub``. Never overwrites a file. Exit codes: 0 written, 2 not written.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from loom_otel.core import environment_variables as env
from loom_otel.core.journal import generate_key

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``keygen``."""
    parser = subparsers.add_parser(
        "keygen",
        help="create an Ed25519 key that signs journal checkpoints",
        description=f"Write a new Ed25519 private key to PATH (mode 0600; set {env.LOOM_OTEL_CHECKPOINT_KEY}=PATH) "
        "and print its public key (PEM) for `loom-otel verify --key`.",
    )
    parser.add_argument("path", metavar="PATH", help="where to write the private key (must not exist)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        public = generate_key(args.path)
    except FileExistsError:
        print(f"loom-otel keygen: {args.path} exists; not overwriting it", file=err)
        return 2
    except OSError as exc:
        print(f"loom-otel keygen: cannot write {args.path} ({exc.strerror or type(exc).__name__})", file=err)
        return 2
    out.write(public)
    print(f"private key written to {args.path} (0600); set {env.LOOM_OTEL_CHECKPOINT_KEY}={args.path}", file=err)
    return 0
