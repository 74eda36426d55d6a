"""``loom-otel tail``: follow an execution's live reasoning in a terminal (the SSE endpoint of
``loom_otel.live.asgi``). Reasoning is untrusted model output: control characters are stripped
before anything reaches the terminal, so it cannot move the cursor, retitle the window or hide text."""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any, Final, TextIO

from loom_otel.cli._terminal import CONTROL
from loom_otel.core import environment_variables as env
from loom_otel.core.runtime import url_problem

__all__ = ["register", "run", "sanitize", "sse_events"]

DEFAULT_URL: Final = "http://127.0.0.1:8765"
EXIT_NOT_FOUND: Final = 1
EXIT_UNREACHABLE: Final = 2
_LIVE_NOT_FOUND: Final = {"error": "not found"}
"""The live view's one 404 (``loom_otel.live.asgi``): unknown, not yours and unauthenticated alike."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``tail`` subcommand (its handler is stored as ``func``)."""
    parser = subparsers.add_parser(
        "tail",
        help="follow an execution's reasoning live (the loom_otel.live.asgi endpoint)",
        description="Print an execution's model reasoning as it streams: first what is already in "
        "progress (or the captured record of ended steps), then each delta. Who you are is proven by "
        "--token (or a credential of your deployment's authenticator passed with --header), never "
        "claimed. Exit codes: 0 done or stream closed, 1 not found or not yours, 2 endpoint unreachable, "
        "busy, or not a live view (what answered is named).",
    )
    parser.add_argument("--execution", required=True, metavar="ID", help="the execution id to follow")
    parser.add_argument(
        "--url", type=_live_url, default=DEFAULT_URL, help=f"base URL of the live view (default: {DEFAULT_URL})"
    )
    parser.add_argument(
        "--token",
        help=f"the bearer token that proves who you are to the live view (default: ${env.LOOM_OTEL_LIVE_TOKEN}); "
        "sent as Authorization: Bearer",
    )
    parser.add_argument(
        "--header", action="append", default=[], metavar="NAME:VALUE", help="an extra request header (repeatable)"
    )
    parser.add_argument("--until-done", action="store_true", help="exit after the first step that ends")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds without any byte before giving up")
    parser.set_defaults(func=run)


def _live_url(value: str) -> str:
    """``--url``: an http(s) URL with a host; anything else is a usage error (exit 2), not a traceback."""
    problem = url_problem(value, ("http", "https"))
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{value!r} is not {problem}")
    return value.strip()


def sanitize(text: str) -> str:
    """Untrusted text for a terminal: no C0/C1 controls (escape sequences) and no bidi overrides."""
    return CONTROL.sub("", text)


def sse_events(lines: Iterator[bytes]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event, JSON data) from SSE lines; comments (keep-alives) and malformed data are skipped."""
    event, data = "message", list[str]()
    for raw in lines:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line:
            if data:
                try:
                    payload = json.loads("\n".join(data))
                except ValueError:
                    payload = None
                if isinstance(payload, dict):
                    yield event, payload
            event, data = "message", list[str]()
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)


class _Printer:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.at: tuple[str, int] | None = None

    def _head(self, step: str, block: int, note: str = "") -> None:
        if self.at == (step, block):
            return
        if self.at is not None:
            self.out.write("\n")
        self.at = (step, block)
        self.out.write(f"--- step {sanitize(step)} block {block}{note} ---\n")

    def _line(self, text: str) -> None:
        if self.at is not None:
            self.out.write("\n")
        self.at = None
        self.out.write(text + "\n")

    def show(self, event: str, data: dict[str, Any]) -> None:
        step = str(data.get("step"))
        if event == "reasoning":
            self._head(step, int(data.get("block", 0)))
            self.out.write(sanitize(str(data.get("text", ""))))
        elif event == "reasoning-partial" and data.get("source") == "record":
            self._record(step, data)
        elif event == "reasoning-partial":
            note = " (catching up; earlier text dropped)" if data.get("truncated") else " (catching up)"
            for block in data.get("blocks", []):
                self.at = None
                self._head(step, int(block.get("block", 0)), note)
                self.out.write(sanitize(str(block.get("text", ""))))
        elif event == "reset":
            which = "every step" if data.get("step") is None else f"step {sanitize(step)}"
            self._line(f"--- reset: {which} was re-run ---")
        elif event == "done":
            kept = "record kept" if data.get("kept") else "no record kept"
            self._line(f"--- step {sanitize(step)} {sanitize(str(data.get('outcome')))} ({kept}) ---")
        self.out.flush()

    def _record(self, step: str, data: dict[str, Any]) -> None:
        self._line(f"--- step {sanitize(step)}: captured record ---")
        for part in data.get("parts", []):
            status = sanitize(str(part.get("status")))
            text = part.get("text")
            self.out.write(f"[{sanitize(str(part.get('kind')))} {status}] ")
            self.out.write(sanitize(str(text)) + "\n" if text is not None else "(no text)\n")
        if data.get("truncated"):
            self.out.write("(truncated: more parts at /reasoning/record)\n")


def _request(args: argparse.Namespace) -> urllib.request.Request:
    execution = urllib.parse.quote(args.execution, safe="")
    url = f"{args.url.rstrip('/')}/executions/{execution}/reasoning"
    headers = {"Accept": "text/event-stream"}
    token = args.token or os.environ.get(env.LOOM_OTEL_LIVE_TOKEN, "").strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    for item in args.header:
        name, _, value = item.partition(":")
        headers[name.strip()] = value.strip()
    return urllib.request.Request(url, headers=headers)


def _body(error: urllib.error.HTTPError) -> object:
    try:
        return json.loads(error.read(4096) or b"null")
    except (ValueError, OSError):
        return None


def _why(body: object) -> str:
    """The server's own reason (a 429 or 503 names the feed cap), cleaned for the terminal."""
    reason = body.get("error") if isinstance(body, dict) else None
    return f": {sanitize(str(reason))}" if reason else ""


def _what_is_there(args: argparse.Namespace, error: urllib.error.HTTPError) -> str:
    """What answered instead of a live view: loom-otel's reasoning viewer (its sign-in page), or a
    server that is neither (its answer's status and type)."""
    url = args.url.rstrip("/")
    try:
        with urllib.request.urlopen(f"{url}/signin", timeout=args.timeout) as page:
            answer = page.read(65536)
        viewer = b'name="token"' in answer and b"loom-otel" in answer
    except (urllib.error.URLError, OSError, ValueError):
        viewer = False
    if viewer:
        return (
            f"{sanitize(url)} is loom-otel's reasoning viewer (loom-otel serve), not a live view: read the "
            f"execution at {sanitize(url)}/executions/{sanitize(urllib.parse.quote(args.execution, safe=''))} in "
            "a browser, or pass --url of the app's live view (loom_otel.live.asgi; a viewer created with a "
            "hub serves it under /live)"
        )
    kind = sanitize(error.headers.get("Content-Type", "no content type") if error.headers else "no content type")
    return (
        f"{sanitize(url)} is not a loom-otel live view: it answered {sanitize(error.url or url)} with HTTP "
        f"{error.code} ({kind}), where a live view answers an execution it does not show with JSON "
        '{"error": "not found"}'
    )


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Follow until the stream closes (or, with ``--until-done``, a step ends)."""
    stream = out if out is not None else sys.stdout
    printer = _Printer(stream)
    try:
        with urllib.request.urlopen(_request(args), timeout=args.timeout) as response:
            for event, data in sse_events(iter(response.readline, b"")):
                printer.show(event, data)
                if args.until_done and event == "done":
                    return 0
    except urllib.error.HTTPError as error:
        body = _body(error)
        if error.code == 404 and body == _LIVE_NOT_FOUND:
            print(f"loom-otel tail: no execution {args.execution!r} that you may read", file=sys.stderr)
            return EXIT_NOT_FOUND
        if error.code == 404:
            print(f"loom-otel tail: {_what_is_there(args, error)}", file=sys.stderr)
            return EXIT_UNREACHABLE
        print(f"loom-otel tail: the live view answered HTTP {error.code}{_why(body)}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except BrokenPipeError:
        raise  # our reader went away, not the live view: the CLI ends quietly
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        print(f"loom-otel tail: cannot reach {args.url}: {reason}", file=sys.stderr)
        return EXIT_UNREACHABLE
    return 0
