"""``LiveReasoningHub``: the catch-up buffer of the live view (ADR D6 "Catch-up").

Pass one as the live sink (``ReasoningConfig(live=True, on_reasoning=hub)``). It keeps the
in-progress reasoning of each (tenant, execution, step), bounded (the head is dropped past
``max_partial_chars``), superseded by a re-run of the same step (viewers get ``Reset``) and cleared
when the call ends (viewers get ``Done``). A viewer that attaches late gets a ``Partial`` per step in
progress, a replayed ``Done`` per step already ended (its durable record is read by the transport,
through ``read_reasoning``), then the live deltas. Every event is filtered by the audience rule
(``admits``): a viewer sees only the steps whose asker or owner they are.

With live text on, the answer's text deltas (``TextDelta``) are passed on to the same audience as they
arrive, as their own event type; they are not buffered, so a late viewer's catch-up is reasoning only.

The hub holds text only in memory and only until the call ends; it never logs it.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict, deque
from typing import Final

from loom_otel.core._fork import renew_after_fork
from loom_otel.core._live import CallEnded, CallStarted, LiveCall, LiveEvent, ReasoningDelta, TextDelta
from loom_otel.core._live_feed import (
    SUBSCRIBER_CAPACITY,
    Done,
    FeedEvent,
    Partial,
    Reset,
    Subscription,
    Viewer,
    admits,
)

__all__ = ["LiveReasoningHub"]

MAX_PARTIAL_CHARS: Final = 256 * 1024
MAX_EXECUTIONS: Final = 1024
MAX_STEPS: Final = 256

_Key = tuple[str | None, str]


class _Buffer:
    """One step's in-progress reasoning: pieces in arrival order, head dropped past the cap."""

    __slots__ = ("call", "chars", "pieces", "truncated")

    def __init__(self, call: LiveCall) -> None:
        self.call = call
        self.pieces: deque[tuple[int, str]] = deque()
        self.chars = 0
        self.truncated = False

    def append(self, block: int, text: str, cap: int) -> None:
        self.pieces.append((block, text))
        self.chars += len(text)
        while self.chars > cap and self.pieces:
            head_block, head = self.pieces.popleft()
            over = self.chars - cap
            self.truncated = True
            if len(head) > over:
                self.pieces.appendleft((head_block, head[over:]))
                self.chars -= over
            else:
                self.chars -= len(head)

    def partial(self) -> Partial:
        blocks: list[tuple[int, str]] = []
        for block, text in self.pieces:
            if blocks and blocks[-1][0] == block:
                blocks[-1] = (block, blocks[-1][1] + text)
            else:
                blocks.append((block, text))
        return Partial(self.call, tuple(blocks), self.truncated)


class _Execution:
    __slots__ = ("active", "ended")

    def __init__(self) -> None:
        self.active: dict[str, _Buffer] = {}
        self.ended: OrderedDict[str, Done] = OrderedDict()

    def calls(self) -> list[LiveCall]:
        return [d.call for d in self.ended.values()] + [b.call for b in self.active.values()]


class LiveReasoningHub:
    """The live view's in-memory hub; a ``LiveObserver`` (fed on a hand-off worker) and thread-safe."""

    def __init__(
        self,
        *,
        max_partial_chars: int = MAX_PARTIAL_CHARS,
        max_executions: int = MAX_EXECUTIONS,
        max_steps: int = MAX_STEPS,
        subscriber_capacity: int = SUBSCRIBER_CAPACITY,
    ) -> None:
        self._max_chars = max_partial_chars
        self._max_executions = max_executions
        self._max_steps = max_steps
        self._subscriber_capacity = subscriber_capacity
        self._lock = threading.Lock()
        self._executions: OrderedDict[_Key, _Execution] = OrderedDict()
        self._subscribers: dict[_Key, list[Subscription]] = {}
        renew_after_fork(self)

    def __repr__(self) -> str:
        return f"LiveReasoningHub(executions={len(self._executions)})"

    # -- fed by the live channel -------------------------------------------------------------------

    def observe(self, event: LiveEvent) -> None:
        with self._lock:
            if isinstance(event, ReasoningDelta):
                self._delta(event)
            elif isinstance(event, TextDelta):
                self._text(event)
            elif isinstance(event, CallStarted):
                self._started(event.call)
            else:
                self._ended(event)

    def _execution(self, call: LiveCall) -> _Execution:
        key = (call.tenant, call.execution_id)
        state = self._executions.get(key)
        if state is None:
            state = self._executions[key] = _Execution()
            self._evict()
        self._executions.move_to_end(key)
        return state

    def _evict(self) -> None:
        while len(self._executions) > self._max_executions:
            idle = next((k for k, e in self._executions.items() if not e.active), None)
            key = idle if idle is not None else next(iter(self._executions))
            del self._executions[key]

    def _started(self, call: LiveCall) -> None:
        state = self._execution(call)
        step = call.step_id
        previous = state.active.get(step) or state.ended.pop(step, None)
        state.active[step] = _Buffer(call)
        if previous is not None:
            self._publish(previous.call, Reset(step))

    def _delta(self, delta: ReasoningDelta) -> None:
        state = self._executions.get((delta.tenant, delta.execution_id))
        buffer = state.active.get(delta.step_id) if state is not None else None
        if buffer is None or buffer.call.call_id != delta.call_id:
            return  # superseded by a re-run, or its start was never seen
        buffer.append(delta.block_index, delta.text.text, self._max_chars)
        self._publish(buffer.call, delta)

    def _text(self, delta: TextDelta) -> None:
        state = self._executions.get((delta.tenant, delta.execution_id))
        buffer = state.active.get(delta.step_id) if state is not None else None
        if buffer is not None and buffer.call.call_id == delta.call_id:
            self._publish(buffer.call, delta)  # not buffered: the catch-up is reasoning only

    def _ended(self, event: CallEnded) -> None:
        call = event.call
        state = self._execution(call)
        buffer = state.active.get(call.step_id)
        if buffer is not None:
            if buffer.call.call_id != call.call_id:
                return  # a re-run of the step is in progress: this call was superseded
            del state.active[call.step_id]
        done = Done(call, event.outcome, event.kept, event.attempt, event.streamed)
        state.ended.pop(call.step_id, None)
        state.ended[call.step_id] = done
        while len(state.ended) > self._max_steps:
            state.ended.popitem(last=False)
        self._publish(call, done)

    def _publish(self, call: LiveCall, event: FeedEvent) -> None:
        key = (call.tenant, call.execution_id)
        subscribers = self._subscribers.get(key)
        if not subscribers:
            return
        live = [s for s in subscribers if not s.closed]
        if len(live) != len(subscribers):
            self._subscribers[key] = live
        for subscriber in live:
            if admits(call, subscriber.viewer):
                subscriber.push(event)

    # -- read by the transport -----------------------------------------------------------------------

    def knows(self, execution_id: str, viewer: Viewer | None) -> bool:
        """Whether ``viewer`` may see anything of ``execution_id`` (else: the same 404 as unknown)."""
        with self._lock:
            state = self._executions.get((viewer.tenant if viewer else None, execution_id))
            return state is not None and any(admits(c, viewer) for c in state.calls())

    def ended_step(self, execution_id: str, step_id: str, viewer: Viewer | None) -> Done | None:
        """The end of ``step_id`` if ``viewer`` may read it (the record endpoint's audience check)."""
        with self._lock:
            state = self._executions.get((viewer.tenant if viewer else None, execution_id))
            done = state.ended.get(step_id) if state is not None else None
            return done if done is not None and admits(done.call, viewer) else None

    def ended_steps(self, execution_id: str, viewer: Viewer | None) -> list[Done]:
        with self._lock:
            state = self._executions.get((viewer.tenant if viewer else None, execution_id))
            ended = list(state.ended.values()) if state is not None else []
            return [d for d in ended if admits(d.call, viewer)]

    def viewers(self, execution_id: str, *, tenant: str | None = None) -> int:
        """How many viewers follow ``execution_id`` right now."""
        with self._lock:
            return sum(not s.closed for s in self._subscribers.get((tenant, execution_id), ()))

    def partial(self, execution_id: str, step_id: str, *, tenant: str | None = None) -> Partial | None:
        """The in-progress reasoning of a step (no audience check: for in-process use and tests)."""
        with self._lock:
            state = self._executions.get((tenant, execution_id))
            buffer = state.active.get(step_id) if state is not None else None
            return buffer.partial() if buffer is not None else None

    def subscribe(self, execution_id: str, viewer: Viewer) -> Subscription | None:
        """A feed of ``execution_id`` for ``viewer``, starting with the catch-up; ``None`` when the
        viewer may not see it (or it is unknown). Call from the event loop that will read it."""
        loop = asyncio.get_running_loop()
        key = (viewer.tenant, execution_id)
        subscription = Subscription(
            viewer,
            execution_id,
            resync=self._resync,
            close=self._unsubscribe,
            loop=loop,
            capacity=self._subscriber_capacity,
        )
        with self._lock:
            state = self._executions.get(key)
            if state is None or not any(admits(c, viewer) for c in state.calls()):
                return None
            subscription.restart(self._catch_up(state, viewer))
            self._subscribers.setdefault(key, []).append(subscription)
        return subscription

    def _catch_up(self, state: _Execution, viewer: Viewer) -> list[FeedEvent]:
        events: list[FeedEvent] = [
            Done(d.call, d.outcome, d.kept, d.attempt, d.streamed, replay=True)
            for d in state.ended.values()
            if admits(d.call, viewer)
        ]
        events.extend(b.partial() for b in state.active.values() if admits(b.call, viewer))
        return events

    def _resync(self, subscription: Subscription) -> None:
        with self._lock:
            state = self._executions.get((subscription.viewer.tenant, subscription.execution_id))
            catch_up = self._catch_up(state, subscription.viewer) if state is not None else []
            subscription.restart([Reset(None), *catch_up])

    def _unsubscribe(self, subscription: Subscription) -> None:
        key = (subscription.viewer.tenant, subscription.execution_id)
        with self._lock:
            kept = [s for s in self._subscribers.get(key, ()) if s is not subscription]
            if kept:
                self._subscribers[key] = kept
            else:
                self._subscribers.pop(key, None)
