"""``serve()``: the simulator over real HTTP on 127.0.0.1 (stdlib server, one thread per connection)."""

from __future__ import annotations

import functools
import socket
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

if TYPE_CHECKING:
    from ._simulator import Simulator


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as real API servers: no 40 ms delayed-ACK stall between writes
    simulator: ClassVar[Simulator]

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        content = self.rfile.read(length) if length else b""
        if url.path in ("/", "/healthz") and self.command == "GET":
            self._write_body(200, "application/json", b'{"status":"ok"}', {})
            return
        reply = self.simulator.handle(
            self.command, url.path, dict(parse_qsl(url.query)), dict(self.headers.items()), content
        )
        if not reply.stream:
            self._write_body(reply.status, reply.content_type, reply.body, reply.headers)
            return
        self.send_response(reply.status)
        self.send_header("content-type", reply.content_type)
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        for chunk in reply.chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        if reply.abort:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_body(self, status: int, content_type: str, body: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any) -> None:
        """A client that went away mid-answer (a stream closed early) is no error of the simulator's:
        nothing is printed for it; anything else is reported as the standard library does."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class SimulatorServer:
    """A running simulator server: ``url``, ``port``, ``close()``; a context manager."""

    def __init__(self, simulator: Simulator, host: str = "127.0.0.1", port: int = 0) -> None:
        if host not in ("127.0.0.1", "localhost"):
            raise ValueError("the simulator binds only to 127.0.0.1")
        handler = type("SimulatorHandler", (_Handler,), {"simulator": simulator})
        self._httpd = _Server(("127.0.0.1", port), handler)
        self.simulator = simulator
        self.host = "127.0.0.1"
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://{self.host}:{self.port}"
        self._thread = threading.Thread(
            target=functools.partial(self._httpd.serve_forever, poll_interval=0.05),
            name="loom-otel-simulator",
            daemon=True,
        )
        self._thread.start()
        self._closed = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def wait(self) -> None:
        """Block until ``close()`` is called from another thread (or the process is interrupted)."""
        self._thread.join()

    def __enter__(self) -> SimulatorServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def serve(simulator: Simulator, host: str = "127.0.0.1", port: int = 0) -> SimulatorServer:
    """Serve ``simulator`` over HTTP on 127.0.0.1 in a background thread (``port=0``: any free port)."""
    return SimulatorServer(simulator, host, port)
