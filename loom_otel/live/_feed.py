"""What a viewer of the live view receives from ``LiveReasoningHub``: the feed events, the audience
rule, and ``Subscription`` (one viewer's bounded feed, consumed from asyncio, fed from any thread)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from loom_otel.core.policy import Audience, ReadingPolicy, may_read
from loom_otel.core.runtime import renew_after_fork
from loom_otel.live._channel import LiveCall, ReasoningDelta, TextDelta

__all__ = ["Done", "FeedEvent", "Partial", "Reset", "Subscription", "Viewer", "admits"]

SUBSCRIBER_CAPACITY: Final = 1024
_NO_POLICY: Final = ReadingPolicy()


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is asking: a principal within a tenant (``None``: no tenant), as an authenticator saw it."""

    principal: str
    tenant: str | None = None


def admits(call: LiveCall, viewer: Viewer | None, policy: ReadingPolicy = _NO_POLICY) -> bool:
    """The viewer asked for the call's tenant and may read it by the one rule (``may_read``): the call's
    principal (the asker), the execution's owner, or an auditor ``policy`` names for that tenant. A call
    with no principal is its auditors' alone. A viewer without a principal (``None`` or empty) is nobody."""
    if viewer is None or viewer.tenant != call.tenant:
        return False
    return may_read(viewer.principal, Audience(call.tenant, call.principal, call.owner), policy)


@dataclass(frozen=True, slots=True)
class Partial:
    """The in-progress reasoning of one step so far (``truncated``: its head was dropped past the cap)."""

    call: LiveCall
    blocks: tuple[tuple[int, str], ...]
    truncated: bool


@dataclass(frozen=True, slots=True)
class Reset:
    """Forget what was shown for ``step_id`` (a re-run superseded it); ``None``: for every step (the
    feed fell behind and is sent again from a fresh catch-up)."""

    step_id: str | None


@dataclass(frozen=True, slots=True)
class Done:
    """A step's call ended. ``replay``: it had ended before this viewer attached (so the viewer saw no
    delta of it); ``streamed``: it delivered live deltas; ``kept``: its record can be read back;
    ``refs``: its capture's part refs (with ``attempt``, which record is this call's and no one else's)."""

    call: LiveCall
    outcome: str
    kept: bool
    attempt: int | None
    streamed: bool
    replay: bool = False
    refs: tuple[str, ...] = ()


FeedEvent = Partial | ReasoningDelta | TextDelta | Reset | Done


class Subscription:
    """One viewer's feed. ``push`` is called by the hub (any thread) and never blocks; past
    ``capacity`` unread events the feed is marked lagging and re-synchronised on the next read."""

    def __init__(
        self,
        viewer: Viewer,
        execution_id: str,
        *,
        resync: Callable[[Subscription], None],
        close: Callable[[Subscription], None],
        loop: asyncio.AbstractEventLoop,
        capacity: int = SUBSCRIBER_CAPACITY,
    ) -> None:
        self.viewer = viewer
        self.execution_id = execution_id
        self._resync = resync
        self._close = close
        self._loop = loop
        self._capacity = capacity
        self._items: deque[FeedEvent] = deque()
        self._lock = threading.Lock()
        self._wake = asyncio.Event()
        self._lagged = False
        self.closed = False
        renew_after_fork(self)

    def push(self, event: FeedEvent) -> None:
        with self._lock:
            if self.closed:
                return
            if len(self._items) >= self._capacity:
                self._items.clear()
                self._lagged = True
            else:
                self._items.append(event)
        try:
            self._loop.call_soon_threadsafe(self._wake.set)
        except RuntimeError:  # the viewer's event loop is gone: the hub prunes closed feeds
            self.closed = True

    def restart(self, events: list[FeedEvent]) -> None:
        """Replace whatever is pending by ``events`` (the hub calls this under its lock)."""
        with self._lock:
            self._items.clear()
            self._items.extend(events)
            self._lagged = False

    async def next_batch(self, timeout: float | None = None) -> list[FeedEvent]:
        """What arrived since the last read; waits up to ``timeout`` (``[]`` then, e.g. to keep alive)."""
        while True:
            with self._lock:
                lagged, self._lagged = self._lagged, False
                items = list(self._items)
                self._items.clear()
                self._wake.clear()
            if lagged:
                self._resync(self)
                continue
            if items or self.closed:
                return items
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except TimeoutError:
                return []

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
        with contextlib.suppress(Exception):
            self._close(self)
