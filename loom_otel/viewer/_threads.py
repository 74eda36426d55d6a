"""The viewer's worker threads: blocking reads run off the event loop, the quick ones first.

A worker answers many readers at once. One step's read costs well under a millisecond of the process,
a page of a hundred parts several: in one first-come queue (``asyncio.to_thread``'s executor) a step read
waits behind every page queued before it. Here each job is due ``WAIT`` after it is queued (by its kind:
``QUICK`` or ``SLOW``) and a free thread takes the job due first: a step read goes before the pages queued
less than ``WAIT[SLOW] - WAIT[QUICK]`` before it, and a page that has waited that long goes before any
step read queued after (no page waits behind an endless run of them); jobs of one kind keep their order.
A job runs in a copy of its caller's context (as ``asyncio.to_thread``'s do), and its result or
exception is handed back to the caller's event loop; a caller that went away (a cancelled request)
still has its job run, so a read is recorded whole or not at all.

Reads that stay on this machine take the processor for all of their time, and threads of one process
share one interpreter: a step read running beside pages would last as long as they do. There the viewer
keeps one thread (``_app._reading_threads``), so the order of the queue is the order of service.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import os
import queue
import threading
from collections.abc import Callable
from time import monotonic
from typing import Any, Final, TypeVar

__all__ = ["PriorityThreads", "QUICK", "SLOW", "WAIT"]

QUICK: Final = 0
"""One step's read (a part, its record, its who-read)."""
SLOW: Final = 1
"""A page of many parts."""
WAIT: Final = (0.15, 0.3)
"""Seconds after which a job of each kind is due (the latency each is meant to keep under load)."""

_T = TypeVar("_T")
_IDLE: Final = 60.0
"""Seconds a thread waits for a job before it ends."""
_STOP: Final = float("inf")
"""Due after every job: a thread takes it once nothing else waits, and ends."""


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """On the caller's loop: hand the job's outcome over (unless the caller went away)."""
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class PriorityThreads:
    """Up to ``threads`` threads (default as asyncio's executor: CPUs + 4, at most 32), each taking the
    job due first; one more is started when a job finds none idle, and one idle for ``_IDLE`` seconds
    ends. ``close`` lets them finish what waits and end."""

    def __init__(self, threads: int | None = None) -> None:
        self._most = threads or min(32, (os.cpu_count() or 1) + 4)
        self._jobs: queue.PriorityQueue[tuple[Any, ...]] = queue.PriorityQueue()
        self._order = itertools.count()
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._idle = 0
        self._closed = False

    @property
    def most(self) -> int:
        """How many threads may run at once."""
        return self._most

    async def run(self, kind: int, fn: Callable[..., _T], /, *args: Any) -> _T:
        """``fn(*args)`` on one of the threads, its kind (``QUICK`` or ``SLOW``) deciding when it is due."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        call = contextvars.copy_context().run
        with self._lock:
            if self._closed:
                raise RuntimeError("the viewer's threads are closed")
            self._jobs.put((monotonic() + WAIT[kind], next(self._order), lambda: call(fn, *args), loop, future))
            if self._idle <= 0 and len(self._threads) < self._most:
                thread = threading.Thread(target=self._work, name="loom-otel-viewer", daemon=True)
                self._threads.add(thread)
                thread.start()
            else:
                self._idle -= 1  # taken by this job (a thread waiting, or about to)
        return await future

    def _work(self) -> None:
        me = threading.current_thread()
        while True:
            try:
                job = self._jobs.get(timeout=_IDLE)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():
                        self._idle -= 1
                        self._threads.discard(me)
                        return
                continue
            if job[0] == _STOP:
                with self._lock:
                    self._threads.discard(me)
                return
            _, _, fn, loop, future = job
            result: Any = None
            error: BaseException | None = None
            try:
                result = fn()
            except BaseException as raised:  # handed to the caller, as an executor does
                error = raised
            with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits for it
                loop.call_soon_threadsafe(_settle, future, result, error)
            del job, fn, future, result, error
            with self._lock:
                self._idle += 1

    def close(self) -> None:
        """Take no more jobs; the threads end once the jobs queued before are done."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
            for _ in threads:
                self._jobs.put((_STOP, next(self._order)))
        for thread in threads:
            thread.join(timeout=30)
