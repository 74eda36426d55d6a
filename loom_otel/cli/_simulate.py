"""``loom-otel simulate``: serve the vendor simulator over HTTP until interrupted, with the scenario
options ``Simulator`` has (tool rounds, redacted and interleaved thinking, reasoning text and size,
stream chunks, the Chat Completions reasoning field)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from loom_otel.testing.simulator import Simulator

__all__ = ["register", "run", "simulator_from"]


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {number}")
    return number


def _not_negative(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {number}")
    return number


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
    scenario = parser.add_argument_group("scenario")
    scenario.add_argument(
        "--tool-rounds",
        type=_not_negative,
        default=1,
        metavar="N",
        help="the model calls a tool while fewer than N tool results were given in the current turn (default: 1)",
    )
    scenario.add_argument(
        "--interleaved",
        action="store_true",
        help="Anthropic: think between tool calls (two tool calls per round when the request offers two tools)",
    )
    scenario.add_argument(
        "--redacted", action="store_true", help="Anthropic: add a redacted_thinking block to final answers"
    )
    scenario.add_argument("--reasoning-text", default=None, metavar="TEXT", help="the model's reasoning text")
    scenario.add_argument(
        "--thinking-size", type=_positive, default=None, metavar="BYTES", help="pad the reasoning to about BYTES"
    )
    scenario.add_argument(
        "--stream-chunks",
        type=_positive,
        default=5,
        metavar="N",
        help="streamed reasoning arrives in N deltas (default: 5)",
    )
    scenario.add_argument(
        "--reasoning-field",
        choices=["reasoning_content", "reasoning"],
        default="reasoning_content",
        help="OpenAI Chat Completions: the field that carries reasoning (default: reasoning_content)",
    )
    scenario.add_argument(
        "--secret",
        default=None,
        metavar="TEXT",
        help="the key that signs reasoning blocks (default: a fixed one, so signatures survive a restart)",
    )
    parser.set_defaults(func=run)


def simulator_from(args: argparse.Namespace) -> Simulator:
    """The ``Simulator`` the command line asks for."""
    from loom_otel.testing.simulator import Simulator

    options = {} if args.secret is None else {"secret": args.secret.encode()}
    return Simulator(
        strict=args.strict,
        reasoning_text=args.reasoning_text,
        thinking_size=args.thinking_size,
        stream_chunks=args.stream_chunks,
        max_tool_rounds=args.tool_rounds,
        redacted=args.redacted,
        interleaved=args.interleaved,
        reasoning_field=args.reasoning_field,
        **options,
    )


def _scenario(simulator: Simulator) -> str:
    script = simulator.script
    said = [
        "strict" if script.strict else "non-strict",
        f"{script.max_tool_rounds} tool round(s) per turn",
        f"{script.stream_chunks} reasoning deltas per stream",
    ]
    said += ["interleaved thinking"] * script.interleaved + ["redacted thinking"] * script.redacted
    if script.reasoning_text is not None or script.thinking_size is not None:
        said.append("custom reasoning" + (f" (~{script.thinking_size} bytes)" if script.thinking_size else ""))
    if script.reasoning_field != "reasoning_content":
        said.append(f"chat reasoning in '{script.reasoning_field}'")
    return ", ".join(said)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Serve until interrupted; exit code 0 on Ctrl-C."""
    from loom_otel.testing.simulator import serve

    stream = out if out is not None else sys.stdout
    simulator = simulator_from(args)
    try:
        server = serve(simulator, host=args.host, port=args.port)
    except OSError as error:
        print(f"loom-otel simulate: cannot listen on port {args.port}: {error}", file=sys.stderr)
        return 2
    with server:
        print(f"Vendor simulator listening on {server.url}", file=stream)
        print(f"Scenario: {_scenario(simulator)}", file=stream)
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
