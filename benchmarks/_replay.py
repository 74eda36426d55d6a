"""Recorded vendor replies, replayed fresh for every call: in process, or over a real socket.

``Recording`` is the simulator answering once per (path, streamed?); every later call gets those bytes
back with a call counter written over ``MARK`` (put at the start of the simulated reasoning) and over
the head of every signature, so each call's reasoning text and signature are new, as in a real agent
loop: the store and the binding records do the work of a new block, not of a repeat. The bare figure is
the SDK's own cost (and, over a socket, its real HTTP transport's), never the simulator's. Being a
``Simulator``, it plugs into the simulator's own in-process transport and HTTP server.

    python benchmarks/_replay.py [simulator options as JSON]

serves the replies on 127.0.0.1 in its own process (so it takes no time from the measured one) and
prints its URL.
"""

from __future__ import annotations

import dataclasses
import http.server
import itertools
import json
import re
import sys
import threading
from collections.abc import Mapping
from typing import Any

from loom_otel.testing.simulator import Simulator, serve
from loom_otel.testing.simulator._exchange import Reply

__all__ = ["MARK", "Recording"]

MARK = "@@@@@@@@"
_SIGNATURES = re.compile(rb'"(?:signature|thoughtSignature|thought_signature)":\s*"([A-Za-z0-9+/_-]{8})')


class Recording(Simulator):
    """The simulator's first reply per (path, streamed?), and a fresh copy of it per call."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._recorded: dict[tuple[str, bool], Reply] = {}
        self._counter = itertools.count()
        self._replay_lock = threading.Lock()

    def handle(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str], content: bytes
    ) -> Reply:
        key = (path, b'"stream":true' in content or query.get("alt") == "sse")
        with self._replay_lock:
            if key not in self._recorded:
                self._recorded[key] = super().handle(method, path, query, headers, content)
            stamp = f"{next(self._counter):08x}".encode()
        reply = self._recorded[key]
        return dataclasses.replace(reply, chunks=tuple(_stamp(chunk, stamp) for chunk in reply.chunks))


def _stamp(chunk: bytes, stamp: bytes) -> bytes:
    if MARK.encode() in chunk:
        chunk = chunk.replace(MARK.encode(), stamp)
    if b"ignature" in chunk:
        chunk = _SIGNATURES.sub(lambda m: m.group(0)[: -len(stamp)] + stamp, chunk)
    return chunk


def main() -> None:
    options: dict[str, Any] = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    # Its own process: a listen backlog for many clients connecting at once (the default is 5)
    http.server.ThreadingHTTPServer.request_queue_size = 256
    server = serve(Recording(**options))
    print(server.url, flush=True)
    server.wait()


if __name__ == "__main__":
    main()
