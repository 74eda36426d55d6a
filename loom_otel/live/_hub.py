"""``LiveReasoningHub``: the catch-up buffer of the live view (ADR D6 "Catch-up").

Pass one as the live sink (``ReasoningConfig(live=True, on_reasoning=hub)``). It keeps the
in-progress reasoning of each call, bounded (the head is dropped past ``max_partial_chars``),
superseded by a re-run (viewers get ``Reset``) and cleared when the call ends (viewers get ``Done``).
A re-run is a later call of the same step with the same audience (principal and owner, in one
tenant and execution): calls of other principals that share a step name are kept apart, never
superseded by, merged with or served as each other. A viewer that attaches late gets a ``Partial``
per call in progress, a replayed ``Done`` per call already ended (its durable record is read by the
transport, that call's capture only), then the live deltas. Every event is filtered by the audience
rule (``admits``, ``policy``: the reading policy, default ``LOOM_OTEL_POLICY``): a viewer sees only the calls
whose asker, owner or auditor they are, and ``readable`` names
the ended calls whose captures it may read.

Bounded in size (``max_partial_chars`` per call, ``max_executions``, ``max_steps`` ended calls kept
per execution, ``subscriber_capacity`` events per viewer) and in number of viewers: at most
``max_subscribers`` feeds in all and ``max_subscribers_per_viewer`` per viewer;
``subscribe`` past either raises ``LiveSubscriberLimitError``.

With live text on, the answer's text deltas (``TextDelta``) are passed on to the same audience as they
arrive, as their own event type; they are not buffered, so a late viewer's catch-up is reasoning only.

The hub holds text only in memory and only until the call ends; it never logs it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections import OrderedDict, deque
from typing import Final

from loom_otel.core.exceptions import LiveSubscriberLimitError, ReasoningConfigError
from loom_otel.core.policy import ReadingPolicy, policy_from_env
from loom_otel.core.runtime import renew_after_fork
from loom_otel.live._channel import CallEnded, CallStarted, LiveCall, LiveEvent, ReasoningDelta, TextDelta
from loom_otel.live._feed import (
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
MAX_SUBSCRIBERS: Final = 256
"""Open feeds in all: a slow viewer holds up to ``SUBSCRIBER_CAPACITY`` events (about 240 KiB measured)."""
MAX_SUBSCRIBERS_PER_VIEWER: Final = 16
"""Open feeds of one viewer (principal and tenant): one viewer cannot take every place."""

_Key = tuple[str | None, str]
_Lane = tuple[str, str | None, str | None]
"""(step, principal, owner): the calls of one step that one audience sees; a re-run supersedes within it."""


def _lane(call: LiveCall) -> _Lane:
    return (call.step_id, call.principal, call.owner)


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
    """One (tenant, execution): the calls streaming now (by call id) and the ended calls of each lane
    (oldest first; lanes in the order they last ended, the oldest forgotten first)."""

    __slots__ = ("active", "ended", "kept")

    def __init__(self) -> None:
        self.active: dict[int, _Buffer] = {}
        self.ended: OrderedDict[_Lane, list[Done]] = OrderedDict()
        self.kept = 0

    def streaming(self, lane: _Lane) -> _Buffer | None:
        return next((b for b in self.active.values() if _lane(b.call) == lane), None)

    def newest(self, lane: _Lane) -> LiveCall | None:
        """The lane's newest call, streaming or ended."""
        buffer, ended = self.streaming(lane), self.ended.get(lane)
        calls = [*([buffer.call] if buffer else []), *([ended[-1].call] if ended else [])]
        return max(calls, key=lambda c: c.call_id, default=None)

    def keep(self, lane: _Lane, done: Done, limit: int) -> None:
        calls = self.ended.pop(lane, [])
        calls.append(done)
        calls.sort(key=lambda d: d.call.call_id)
        self.ended[lane] = calls
        self.kept += 1
        while self.kept > limit:
            oldest_lane, oldest = next(iter(self.ended.items()))
            del oldest[0]
            self.kept -= 1
            if not oldest:
                del self.ended[oldest_lane]

    def calls(self) -> list[LiveCall]:
        return [d.call for calls in self.ended.values() for d in calls] + [b.call for b in self.active.values()]

    def latest(self) -> list[Done]:
        """The newest ended call of each lane with no call streaming (what a late viewer is replayed)."""
        streaming = {_lane(b.call) for b in self.active.values()}
        return [calls[-1] for lane, calls in self.ended.items() if lane not in streaming]


class LiveReasoningHub:
    """The live view's in-memory hub; a ``LiveObserver`` (fed on a hand-off worker) and thread-safe."""

    def __init__(
        self,
        *,
        max_partial_chars: int = MAX_PARTIAL_CHARS,
        max_executions: int = MAX_EXECUTIONS,
        max_steps: int = MAX_STEPS,
        subscriber_capacity: int = SUBSCRIBER_CAPACITY,
        max_subscribers: int = MAX_SUBSCRIBERS,
        max_subscribers_per_viewer: int = MAX_SUBSCRIBERS_PER_VIEWER,
        policy: ReadingPolicy | None = None,
    ) -> None:
        for name, value in (
            ("max_subscribers", max_subscribers),
            ("max_subscribers_per_viewer", max_subscribers_per_viewer),
        ):
            if value < 1:
                raise ReasoningConfigError(f"LiveReasoningHub({name}={value!r}): at least 1")
        self._max_chars = max_partial_chars
        self._max_executions = max_executions
        self._max_steps = max_steps
        self._subscriber_capacity = subscriber_capacity
        self._max_subscribers = max_subscribers
        self._max_per_viewer = max_subscribers_per_viewer
        self._policy = policy if policy is not None else policy_from_env()
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
        lane = _lane(call)
        previous, superseded = state.newest(lane), state.streaming(lane)
        if superseded is not None:
            del state.active[superseded.call.call_id]
        state.active[call.call_id] = _Buffer(call)
        if previous is not None:
            self._publish(call, Reset(call.step_id))  # the lane's audience: those who saw the previous

    def _buffer(self, delta: ReasoningDelta | TextDelta) -> _Buffer | None:
        """The delta's call in progress (``None``: superseded by a re-run, or its start was never seen)."""
        state = self._executions.get((delta.tenant, delta.execution_id))
        buffer = state.active.get(delta.call_id) if state is not None else None
        return buffer if buffer is not None and buffer.call.step_id == delta.step_id else None

    def _delta(self, delta: ReasoningDelta) -> None:
        buffer = self._buffer(delta)
        if buffer is not None:
            buffer.append(delta.block_index, delta.text.text, self._max_chars)
            self._publish(buffer.call, delta)

    def _text(self, delta: TextDelta) -> None:
        buffer = self._buffer(delta)
        if buffer is not None:
            self._publish(buffer.call, delta)  # not buffered: the catch-up is reasoning only

    def _ended(self, event: CallEnded) -> None:
        call = event.call
        state = self._execution(call)
        lane = _lane(call)
        newest = state.newest(lane)
        done = Done(call, event.outcome, event.kept, event.attempt, event.streamed, refs=event.refs)
        state.keep(lane, done, self._max_steps)  # superseded or not, its capture stays its readers'
        if newest is not None and newest.call_id > call.call_id:
            return  # a re-run of the step is in progress or ended: this call is no longer announced
        buffer = state.streaming(lane)
        if buffer is not None:
            del state.active[buffer.call.call_id]
            if buffer.call.call_id != call.call_id:  # an older call still streaming: this one supersedes it
                self._publish(call, Reset(call.step_id))
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
            if admits(call, subscriber.viewer, self._policy):
                subscriber.push(event)

    # -- read by the transport -----------------------------------------------------------------------

    def knows(self, execution_id: str, viewer: Viewer | None) -> bool:
        """Whether ``viewer`` may see anything of ``execution_id`` (else: the same 404 as unknown)."""
        with self._lock:
            state = self._executions.get((viewer.tenant if viewer else None, execution_id))
            return state is not None and any(admits(c, viewer, self._policy) for c in state.calls())

    def readable(self, execution_id: str, viewer: Viewer | None, step_id: str | None = None) -> list[Done]:
        """Every ended call of ``execution_id`` (of ``step_id`` only, if given) that ``viewer`` may read,
        in call order: the captures the record endpoint serves it, and no others."""
        with self._lock:
            state = self._executions.get((viewer.tenant if viewer else None, execution_id))
            ended = [d for calls in state.ended.values() for d in calls] if state is not None else []
        chosen = [
            d for d in ended if (step_id is None or d.call.step_id == step_id) and admits(d.call, viewer, self._policy)
        ]
        return sorted(chosen, key=lambda d: d.call.call_id)

    def ended_step(self, execution_id: str, step_id: str, viewer: Viewer | None) -> Done | None:
        """The newest ended call of ``step_id`` that ``viewer`` may read."""
        calls = self.readable(execution_id, viewer, step_id)
        return calls[-1] if calls else None

    def ended_steps(self, execution_id: str, viewer: Viewer | None) -> list[Done]:
        """The newest ended call of each step (and audience) that ``viewer`` may read."""
        with self._lock:
            state = self._executions.get((viewer.tenant if viewer else None, execution_id))
            ended = [calls[-1] for calls in state.ended.values()] if state is not None else []
            return [d for d in ended if admits(d.call, viewer, self._policy)]

    def viewers(self, execution_id: str, *, tenant: str | None = None) -> int:
        """How many viewers follow ``execution_id`` right now."""
        with self._lock:
            return sum(not s.closed for s in self._subscribers.get((tenant, execution_id), ()))

    def partial(self, execution_id: str, step_id: str, *, tenant: str | None = None) -> Partial | None:
        """The in-progress reasoning of a step, its newest call's (no audience check: for in-process use
        and tests)."""
        with self._lock:
            state = self._executions.get((tenant, execution_id))
            buffers = [b for b in state.active.values() if b.call.step_id == step_id] if state is not None else []
            return max(buffers, key=lambda b: b.call.call_id).partial() if buffers else None

    def subscribe(self, execution_id: str, viewer: Viewer) -> Subscription | None:
        """A feed of ``execution_id`` for ``viewer``, starting with the catch-up; ``None`` when the
        viewer may not see it (or it is unknown). Call from the event loop that will read it.

        Raises ``LiveSubscriberLimitError`` when ``viewer`` may see it but ``max_subscribers`` feeds
        are open, or ``max_subscribers_per_viewer`` of this viewer's."""
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
            if state is None or not any(admits(c, viewer, self._policy) for c in state.calls()):
                return None
            self._check_room(viewer)
            subscription.restart(self._catch_up(state, viewer))
            self._subscribers.setdefault(key, []).append(subscription)
        return subscription

    def _check_room(self, viewer: Viewer) -> None:
        open_feeds = [s for feeds in self._subscribers.values() for s in feeds if not s.closed]
        if sum(s.viewer == viewer for s in open_feeds) >= self._max_per_viewer:
            raise LiveSubscriberLimitError(self._max_per_viewer, per_viewer=True)
        if len(open_feeds) >= self._max_subscribers:
            raise LiveSubscriberLimitError(self._max_subscribers, per_viewer=False)

    def _catch_up(self, state: _Execution, viewer: Viewer) -> list[FeedEvent]:
        events: list[FeedEvent] = [
            dataclasses.replace(d, replay=True) for d in state.latest() if admits(d.call, viewer, self._policy)
        ]
        events.extend(b.partial() for b in state.active.values() if admits(b.call, viewer, self._policy))
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
