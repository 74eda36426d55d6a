from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.live import LiveReasoningHub, ReasoningDelta, flush_live


class ListSink:
    """A live sink that keeps what it receives (thread-safe enough: list.append)."""

    def __init__(self) -> None:
        self.deltas: list[ReasoningDelta] = []

    def __call__(self, delta: ReasoningDelta) -> None:
        self.deltas.append(delta)

    def text(self, block: int | None = None) -> str:
        return "".join(d.text.text for d in self.deltas if block is None or d.block_index == block)


@pytest.fixture
def sink() -> ListSink:
    return ListSink()


@pytest.fixture
def hub() -> LiveReasoningHub:
    return LiveReasoningHub()


@pytest.fixture
def live_config(store: MemoryReasoningStore, journal_dir: Path, sink: ListSink) -> ReasoningConfig:
    return ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=sink)


@pytest.fixture(autouse=True)
def _drain_live() -> Iterator[None]:
    yield
    flush_live(5.0)


class Server:
    def __init__(self, app: Any) -> None:
        import uvicorn

        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def serve():
    servers: list[Server] = []

    def start(app: Any) -> Server:
        server = Server(app).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__()
