"""``loom-otel simulate``: serve the vendor simulator over HTTP until interrupted."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``simulate`` subcommand (its handler is stored as ``func``)."""
    parser = subparsers.add_parser(
        "simulate",
        help="serve the built-in vendor simulator (Anthropic, Gemini, OpenAI) over HTTP",
        description="Serve a deterministic fake of the Anthropic, Gemini and OpenAI APIs on 127.0.0.1. "
        "No API key and no network needed; stop with Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any free port)")
    parser.add_argument("--host", default="127.0.0.1", choices=["127.0.0.1", "localhost"], help="bind address")
    parser.add_argument(
        "--no-strict", dest="strict", action="store_false", help="accept requests that break the vendor rules"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Serve until interrupted; exit code 0 on Ctrl-C."""
    from loom_otel.testing.simulator import Simulator, serve

    stream = out if out is not None else sys.stdout
    try:
        server = serve(Simulator(strict=args.strict), host=args.host, port=args.port)
    except OSError as error:
        print(f"loom-otel simulate: cannot listen on port {args.port}: {error}", file=sys.stderr)
        return 2
    with server:
        mode = "strict" if args.strict else "non-strict"
        print(f"Vendor simulator ({mode}) listening on {server.url}", file=stream)
        print("Point the SDKs at it (any API key works):", file=stream)
        print(f"  export ANTHROPIC_BASE_URL={server.url}", file=stream)
        print("  export ANTHROPIC_API_KEY=sim", file=stream)
        print(f"  export GOOGLE_GEMINI_BASE_URL={server.url}", file=stream)
        print("  export GEMINI_API_KEY=sim", file=stream)
        print(f"  export OPENAI_BASE_URL={server.url}/v1", file=stream)
        print("  export OPENAI_API_KEY=sim", file=stream)
        print("Press Ctrl-C to stop.", file=stream, flush=True)
        try:
            server.wait()
        except KeyboardInterrupt:
            print("Stopped.", file=stream)
    return 0
