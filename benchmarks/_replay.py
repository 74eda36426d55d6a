"""Recorded vendor replies, replayed fresh for every call: in process, or over a real socket.

The simulator answers once per (path, streamed?); every later call gets those bytes back with a call
counter written over ``MARK`` (put at the start of the simulated reasoning) and over the head of every
signature, so each call's reasoning text and signature are new, as in a real agent loop: the store and
the binding records do the work of a new block, not of a repeat. The bare figure is the SDK's own cost
(and, over a socket, its real HTTP transport's), never the simulator's.

    python benchmarks/_replay.py [simulator options as JSON]

serves the replies on 127.0.0.1 in its own process (so it takes no time from the measured one) and
prints its URL.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2

from loom_otel.testing.simulator import Simulator

__all__ = ["MARK", "Recording", "recorded_transport"]

MARK = "@@@@@@@@"
_SIGNATURES = re.compile(rb'"(?:signature|thoughtSignature|thought_signature)":\s*"([A-Za-z0-9+/_-]{8})')

Reply = tuple[int, list[tuple[str, str]], list[bytes]]


class Recording:
    """The simulator's first reply per (path, streamed?), and a fresh copy of it per call."""

    def __init__(self, sim: Simulator) -> None:
        self._forward = sim.transport()
        self._recorded: dict[tuple[str, bool], Reply] = {}
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def reply(self, method: str, url: str, headers: list[tuple[str, str]], content: bytes) -> Reply:
        request = httpx2.Request(method, url, headers=headers, content=content)
        key = (request.url.path, b'"stream":true' in content or "alt=sse" in url)
        with self._lock:
            if key not in self._recorded:
                live = self._forward.handle_request(request)
                kept = [(k, v) for k, v in live.headers.items() if k.lower() != "content-length"]
                self._recorded[key] = (live.status_code, kept, list(live.iter_bytes()))
            stamp = f"{next(self._counter):08x}".encode()
        status, kept, chunks = self._recorded[key]
        return status, kept, [_stamp(chunk, stamp) for chunk in chunks]


def _stamp(chunk: bytes, stamp: bytes) -> bytes:
    if MARK.encode() in chunk:
        chunk = chunk.replace(MARK.encode(), stamp)
    if b"ignature" in chunk:
        chunk = _SIGNATURES.sub(lambda m: m.group(0)[: -len(stamp)] + stamp, chunk)
    return chunk


def recorded_transport(sim: Simulator) -> httpx2.MockTransport:
    """In process: a stream is replayed in the chunks the simulator sent."""
    recording = Recording(sim)

    def handler(request: httpx2.Request) -> httpx2.Response:
        status, headers, chunks = recording.reply(
            request.method, str(request.url), list(request.headers.items()), request.content
        )
        return httpx2.Response(status, headers=headers, content=chunks[0] if len(chunks) == 1 else iter(chunks))

    return httpx2.MockTransport(handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as real API servers: no 40 ms delayed-ACK stall between writes
    recording: Recording

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_POST(self) -> None:
        content = self.rfile.read(int(self.headers.get("content-length") or 0))
        url = f"http://{self.headers.get('host', '127.0.0.1')}{self.path}"
        status, headers, chunks = self.recording.reply("POST", url, list(self.headers.items()), content)
        self.send_response(status)
        for name, value in headers:
            if name.lower() != "transfer-encoding":
                self.send_header(name, value)
        streamed = len(chunks) != 1
        if streamed:
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("content-length", str(len(chunks[0])))
        self.end_headers()
        if not streamed:
            self.wfile.write(chunks[0])
            return
        for chunk in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")


def main() -> None:
    options: dict[str, Any] = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    handler = type("Handler", (_Handler,), {"recording": Recording(Simulator(**options))})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
