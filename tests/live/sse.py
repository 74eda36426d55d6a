"""A small SSE client for the tests: reads an endpoint on a thread into a queue."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import httpx2

from loom_otel.cli._tail import sse_events

Event = tuple[str, dict[str, Any]]


class SseReader:
    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.url = url
        self.headers = headers
        self.events: queue.Queue[Event | BaseException] = queue.Queue()
        self.status: int | None = None
        self.opened = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> SseReader:
        self._thread.start()
        assert self.opened.wait(10), "no response"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        try:
            with (
                httpx2.Client(timeout=httpx2.Timeout(10.0)) as client,
                client.stream("GET", self.url, headers=self.headers) as response,
            ):
                self.status = response.status_code
                self.opened.set()
                for event in sse_events(self._lines(response)):
                    self.events.put(event)
        except BaseException as exc:  # surfaced by get()
            self.opened.set()
            self.events.put(exc)

    def _lines(self, response: httpx2.Response) -> Iterator[bytes]:
        for line in response.iter_lines():  # keep-alives arrive every 0.5 s: stop is seen promptly
            if self._stop.is_set():
                return
            yield line.encode()

    def get(self, timeout: float = 10.0) -> Event:
        item = self.events.get(timeout=timeout)
        if isinstance(item, BaseException):
            raise item
        return item

    def until(self, name: str, timeout: float = 10.0) -> list[Event]:
        out: list[Event] = []
        while not out or out[-1][0] != name:
            out.append(self.get(timeout))
        return out
