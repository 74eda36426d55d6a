"""A bounded hand-off from the model-call thread to one consumer (a live sink), drained by a worker.

``offer`` never blocks beyond a short lock and never raises: past ``capacity`` the oldest droppable
item goes (and is counted), so a slow consumer costs the model call nothing. The consumer runs on the
worker thread through the log-and-continue helper, so one that raises is logged once and skipped.
The worker exits after ``idle_exit`` seconds with nothing to do and is restarted by the next offer,
so an uninstrumented channel leaves no thread behind.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

from loom_otel.core.runtime import logger, renew_after_fork, shielded

__all__ = ["DEFAULT_CAPACITY", "Handoff", "flush_handoffs", "handoffs_of"]

T = TypeVar("T")

DEFAULT_CAPACITY: Final = 1024
_IDLE_EXIT: Final = 5.0


def _always(_: object) -> bool:
    return True


class Handoff(Generic[T]):
    """FIFO to ``consumer`` on a daemon worker; drops the oldest droppable item when full."""

    def __init__(
        self,
        consumer: Callable[[T], object],
        *,
        what: str,
        capacity: int = DEFAULT_CAPACITY,
        droppable: Callable[[T], bool] = _always,
        idle_exit: float = _IDLE_EXIT,
        tag: object = None,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._consumer = consumer
        self.tag = tag
        """Whose hand-off this is (a live sink), for counting what it dropped (``handoffs_of``)."""
        self._what = what
        self._capacity = capacity
        self._droppable = droppable
        self._idle_exit = idle_exit
        self._items: deque[T] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._worker: threading.Thread | None = None
        self._busy = False
        self._waiting = 0
        self._dropped = 0
        self._warned = False
        _handoffs.add(self)
        renew_after_fork(self, Handoff._after_fork_in_child)

    @property
    def dropped(self) -> int:
        """How many items were dropped (oldest first) because the consumer fell behind."""
        return self._dropped

    def offer(self, item: T) -> None:
        """Queue ``item``; never blocks on the consumer."""
        warn = False
        with self._cond:
            self._items.append(item)
            if len(self._items) > self._capacity and self._drop_oldest():
                warn = not self._warned
                self._warned = True
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name=f"loom-otel-live:{self._what}", daemon=True)
                self._worker.start()
            elif self._waiting:
                self._cond.notify_all()  # only an idle worker (or a flush) needs waking
        if warn:
            logger.warning("loom-otel: %s is slower than the model stream; dropping the oldest live deltas", self._what)

    def _drop_oldest(self) -> bool:
        if self._droppable(self._items[0]):
            self._items.popleft()
            self._dropped += 1
            return True
        for index, queued in enumerate(self._items):
            if self._droppable(queued):
                del self._items[index]
                self._dropped += 1
                return True
        return False

    def _run(self) -> None:
        while True:
            with self._cond:
                deadline = time.monotonic() + self._idle_exit
                while not self._items:
                    self._busy = False
                    self._cond.notify_all()
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        self._worker = None
                        return
                    self._waiting += 1
                    self._cond.wait(remaining)
                    self._waiting -= 1
                item = self._items.popleft()
                self._busy = True
            shielded(self._what, self._consumer, item)

    def _after_fork_in_child(self) -> None:
        """The worker stayed in the parent, which delivers what was queued: the child starts empty."""
        self._items.clear()
        self._worker = None
        self._busy = False
        self._waiting = 0

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything offered so far was consumed; ``False`` on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._items or self._busy:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True


_handoffs: weakref.WeakSet[Handoff[Any]] = weakref.WeakSet()
"""Every hand-off still alive: a worker with items keeps its own alive, even after the channel that
made it was uninstrumented and collected, so a flush still waits for what it has to deliver."""


def handoffs_of(tag: object | None) -> list[Handoff[Any]]:
    """The live hand-offs tagged ``tag`` (any tag when ``None``): alive while their channel is, or
    while their worker still has something to deliver."""
    return [h for h in list(_handoffs) if h.tag is not None and (tag is None or h.tag is tag)]


def flush_handoffs(timeout: float | None = None) -> bool:
    """Wait until every live hand-off consumed what was offered so far; ``False`` on timeout."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for handoff in list(_handoffs):
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not handoff.flush(remaining):
            return False
    return True
