"""``serve --workers N``: N uvicorn workers, each listening on a socket of its own on the same port
(``SO_REUSEPORT``), so the kernel spreads new connections over them evenly. With one shared socket the
worker that accepts first takes the connection, and a burst of keep-alive connections can land mostly on
one worker, which then serves them on one core while the other waits.

The supervisor binds the port before any worker starts and holds it, bound but not listening (it is never
handed a connection), so ``--port 0`` is resolved once, for every worker, and announced. A worker that exits
is started again, unless it exits within ``_STARTING`` seconds of its start (it cannot serve: the supervisor
stops, and says so). The address is announced once a worker accepts connections. SIGINT and SIGTERM stop
every worker."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import signal
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["bound_port", "serve_workers"]

_STARTING: Final = 5.0
"""A worker that exits sooner than this after its start could not serve: the supervisor gives up."""
_STOPPING: Final = 15.0
"""Seconds the workers have to finish their requests once asked to stop, before they are killed."""


def _bound(host: str, port: int, *, shared: bool) -> socket.socket:
    """A socket bound to ``host:port``; ``shared``: sharing the port with the other workers'
    (``SO_REUSEPORT``), else alone on it (no socket that would share it is let in)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def bound_port(host: str, port: int) -> tuple[socket.socket, int]:
    """The supervisor's hold on ``host:port`` (``port`` 0: a free one), and the port it holds; ``OSError``
    when another socket holds the port, even one that would share it (``SO_REUSEPORT``: another
    ``serve`` on the same port would otherwise split its connections with this one)."""
    with _bound(host, port, shared=False) as alone:
        port = int(alone.getsockname()[1])
    return _bound(host, port, shared=True), port


def _answering(host: str, port: int) -> bool:
    """Whether a connection to ``host:port`` is accepted (an address of every interface: its loopback)."""
    target = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    try:
        with socket.create_connection((target, port), timeout=1):
            return True
    except OSError:
        return False


def _worker(settings: Mapping[str, Any], host: str, port: int) -> None:
    """One worker (a spawned process): uvicorn on a listening socket of its own."""
    import uvicorn

    sock = _bound(host, port, shared=True)
    uvicorn.Server(uvicorn.Config(**settings)).run(sockets=[sock])


def serve_workers(settings: Mapping[str, Any], host: str, port: int, workers: int, announce: Callable[[], None]) -> int:
    """Run ``workers`` workers of ``uvicorn.Config(**settings)`` on ``host:port`` (held by the caller, see
    ``bound_port``) until SIGINT or SIGTERM; ``announce`` once they are started. 0 when stopped, 1 when a
    worker could not start."""
    context = multiprocessing.get_context("spawn")
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    running: dict[int, tuple[multiprocessing.process.BaseProcess, float]] = {}

    def start() -> None:
        process = context.Process(target=_worker, args=(dict(settings), host, port), daemon=False)
        process.start()
        running[process.sentinel] = (process, time.monotonic())

    try:
        for _ in range(max(1, workers)):
            start()
        while not _answering(host, port):  # announced once a worker listens
            if stopping or any(p.exitcode is not None for p, _ in running.values()):
                return 0 if stopping else 1
            time.sleep(0.05)
        announce()
        while not stopping:
            for sentinel in multiprocessing.connection.wait(list(running), timeout=0.5):
                assert isinstance(sentinel, int)  # a process sentinel
                process, started = running.pop(sentinel)
                process.join()
                if stopping:
                    break
                if time.monotonic() - started < _STARTING:
                    return 1
                start()
        return 0
    finally:
        for process, _ in running.values():
            with contextlib.suppress(OSError):
                process.terminate()
        deadline = time.monotonic() + _STOPPING
        for process, _ in running.values():
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
