"""The live view (ADR D6): streamed reasoning deltas to guarded sinks, off the model-call thread.

``ReasoningConfig(live=True, on_reasoning=sink)`` (or ``LOOM_OTEL_REASONING_LIVE=true`` plus
``register_sink(sink)``): each readable reasoning delta of a streamed call becomes a
``ReasoningDelta`` whose text is ``Untrusted(origin="llm-reasoning:<step>")``. It goes through the
delta guards (in order, on the call thread: pass, rewrite the text, or suppress), then to each sink
through its own bounded ``Handoff``, so a sink that raises or blocks costs the call nothing. This
channel is separate from the text the application reads from the SDK stream; deltas are never
journaled, exported or logged: the durable record stays the capture.

``live_text=True`` (``LOOM_OTEL_REASONING_LIVE_TEXT``) also sends the answer's streamed text as
``TextDelta`` events (text ``Untrusted(origin="llm-output:<step>")``): a separate type, so a consumer
that renders one kind never shows the other by accident. Text deltas go through the same guards and
sinks; they never change what the application reads either.

A sink is a callable taking ``ReasoningDelta`` (and ``TextDelta`` when live text is on). A
``LiveObserver`` (``observe(event)``, such as ``LiveReasoningHub``) also sees when each call starts and
ends (``CallStarted``, ``CallEnded``), including the end of calls that streamed nothing, so it can serve
their captured record.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

from loom_otel.core.policy import Untrusted
from loom_otel.core.runtime import logger, renew_after_fork, renew_module_after_fork, shielded
from loom_otel.live._handoff import DEFAULT_CAPACITY, Handoff, flush_handoffs, handoffs_of

if TYPE_CHECKING:
    from loom_otel.core.observers import Capture, ModelCall
    from loom_otel.core.runtime import Runtime

__all__ = [
    "CallEnded",
    "CallStarted",
    "DeltaGuard",
    "LiveCall",
    "LiveChannel",
    "LiveDelta",
    "LiveEvent",
    "LiveObserver",
    "ReasoningDelta",
    "ReasoningSink",
    "TextDelta",
    "dropped_deltas",
    "flush_live",
    "register_sink",
]

OBSERVER_CAPACITY: Final = 8 * DEFAULT_CAPACITY
"""Observers (the hub) are fast; a deeper queue keeps their catch-up buffer whole under bursts."""


@dataclass(frozen=True, slots=True)
class LiveCall:
    """One streamed model call as the live view knows it: whose it is and who may watch it."""

    call_id: int
    execution_id: str
    step_id: str
    provider: str
    tenant: str | None = None
    principal: str | None = None
    owner: str | None = None


@dataclass(frozen=True, slots=True)
class _Delta:
    execution_id: str
    step_id: str
    provider: str
    block_index: int
    text: Untrusted
    tenant: str | None = None
    call_id: int = 0
    seq: int = 0


@dataclass(frozen=True, slots=True)
class ReasoningDelta(_Delta):
    """One increment of streamed reasoning. ``text`` is untrusted model output: read ``.text.text``
    deliberately, never place it in an instruction position. ``seq`` counts the call's deltas from 1."""


@dataclass(frozen=True, slots=True)
class TextDelta(_Delta):
    """One increment of the streamed answer text (live text on): the same fields as ``ReasoningDelta``,
    another type and origin (``llm-output:<step>``). ``seq`` counts the call's text deltas from 1."""


LiveDelta = ReasoningDelta | TextDelta


@dataclass(frozen=True, slots=True)
class CallStarted:
    """A streamed call produced its first live delta (a re-run of a step supersedes the last)."""

    call: LiveCall


@dataclass(frozen=True, slots=True)
class CallEnded:
    """A call ended. ``outcome``: ``completed``, ``failed``, or why a stream stopped (``abandoned``).
    ``kept``: readable reasoning went to the store, so the record can be read back. ``streamed``:
    live deltas were offered (``False`` for complete responses and calls a guard refused). ``refs``: the
    capture's part refs (``""`` where a part kept no text): with ``attempt``, which record is this call's."""

    call: LiveCall
    outcome: str
    kept: bool = False
    attempt: int | None = None
    streamed: bool = True
    refs: tuple[str, ...] = ()


LiveEvent = CallStarted | ReasoningDelta | TextDelta | CallEnded


class ReasoningSink(Protocol):
    """Receives ``ReasoningDelta`` (and ``TextDelta`` when live text is on: check the type)."""

    def __call__(self, delta: ReasoningDelta, /) -> object: ...


@runtime_checkable
class LiveObserver(Protocol):
    """A sink that also sees call boundaries; ``observe`` runs on a hand-off worker, never the call."""

    def observe(self, event: LiveEvent, /) -> None: ...


class DeltaGuard(Protocol):
    """Returns the delta (pass), a delta with other text (rewrite), or ``None`` (suppress).

    Guards run in order on the call thread, so keep them cheap. They see reasoning deltas and, when live
    text is on, text deltas (``TextDelta``): look at the type to treat them differently. One that raises,
    or returns another kind of delta, suppresses the delta (logged once). A guard with
    ``inspects_output = True`` needs the whole output before anything is shown: live delivery of both
    kinds is refused for every call (the calls still succeed and are captured).
    """

    def __call__(self, delta: LiveDelta, /) -> LiveDelta | None: ...


_registered: list[object] = []
_registered_lock = threading.Lock()
renew_module_after_fork(__name__)
_registry_version = 0
_call_ids = itertools.count(1)


def register_sink(sink: ReasoningSink | LiveObserver) -> Callable[[], None]:
    """Add a process-wide live sink (for ``LOOM_OTEL_REASONING_LIVE=true`` set outside the code);
    returns the function that removes it. Sinks only receive anything where live is on."""
    if not callable(sink) and not isinstance(sink, LiveObserver):
        raise TypeError(f"a live sink must be callable or have observe(event), not {type(sink).__name__}")
    global _registry_version
    with _registered_lock:
        _registered.append(sink)
        _registry_version += 1

    def unregister() -> None:
        global _registry_version
        with _registered_lock:
            for index, existing in enumerate(_registered):
                if existing is sink:
                    del _registered[index]
                    _registry_version += 1
                    return

    return unregister


def dropped_deltas(sink: object | None = None) -> int:
    """Deltas dropped (oldest first) because ``sink`` (or, by default, any sink) fell behind: counted by
    its hand-offs, which outlive an uninstrumented channel while they still deliver."""
    return sum(handoff.dropped for handoff in handoffs_of(sink))


def flush_live(timeout: float | None = 5.0) -> bool:
    """Wait until every sink consumed what was offered so far (tests, shutdown), an uninstrumented
    channel's included; ``False`` on timeout."""
    return flush_handoffs(timeout)


def _label(sink: object) -> str:
    name = getattr(sink, "__qualname__", None) or type(sink).__qualname__
    return f"live sink {name}"


class _CallState:
    """One call's observer (``ModelCall.observer``, a core ``CallObserver``): the call's identity, whether
    a guard refused it, the deltas it counted; it reports to its handler's channel."""

    __slots__ = ("call", "channel", "origin", "refused", "seq", "started", "text", "text_origin", "text_seq")

    def __init__(self, channel: LiveChannel, call: LiveCall, refused: bool) -> None:
        self.channel = channel
        self.call = call
        self.origin = f"llm-reasoning:{call.step_id}"
        self.text_origin = f"llm-output:{call.step_id}"
        self.refused = refused
        self.text = channel.text
        self.seq = 0
        self.text_seq = 0
        self.started = False

    def reasoning_delta(self, deltas: Sequence[tuple[int, str]], /) -> None:
        shielded("live delivery", self.channel._deliver, self, deltas, ReasoningDelta)

    def text_delta(self, deltas: Sequence[tuple[int, str]], /) -> None:
        shielded("live delivery", self.channel._deliver, self, deltas, TextDelta)

    def ended(self, outcome: str, captured: Capture | None, /) -> None:
        shielded("live delivery", self.channel._end, self, outcome, captured)


class _SinkDelivery:
    __slots__ = ("handoff", "observer", "sink")

    def __init__(self, sink: object) -> None:
        self.sink = sink
        self.observer = isinstance(sink, LiveObserver)
        consumer: Callable[[LiveEvent], object]
        if isinstance(sink, LiveObserver):
            consumer, capacity = sink.observe, OBSERVER_CAPACITY
        elif callable(sink):
            consumer, capacity = sink, DEFAULT_CAPACITY
        else:
            raise TypeError(f"a live sink must be callable or have observe(event), not {type(sink).__name__}")
        self.handoff: Handoff[LiveEvent] = Handoff(
            consumer, what=_label(sink), capacity=capacity, droppable=_is_delta, tag=sink
        )

    def offer(self, event: LiveEvent) -> None:
        if self.observer or isinstance(event, ReasoningDelta | TextDelta):
            self.handoff.offer(event)


def _is_delta(event: LiveEvent) -> bool:
    return isinstance(event, ReasoningDelta | TextDelta)


class LiveChannel:
    """The live view of one ``ReasoningHandler``: built by its instrumentor when ``runtime.live`` is on
    (``ReasoningInstrumentor.live_view``); calling it starts a call's observer (``ObserverFactory``)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._guards: tuple[Callable[..., object], ...] = tuple(runtime.delta_guards)
        self.refuses = any(getattr(g, "inspects_output", False) is True for g in self._guards)
        """A guard inspects the whole output: nothing is delivered live (of either kind)."""
        self.text = runtime.live_text and not self.refuses
        """Live text is on: streams report the answer's text deltas too."""
        self._outlets: list[_SinkDelivery] = []
        self._outlets_for: tuple[object, int] | None = None  # (configured sink, registry version)
        self._lock = threading.Lock()
        renew_after_fork(self)

    def __call__(self, call: ModelCall) -> _CallState:
        """The observer of ``call``, started when it first has something to tell (its identity is known)."""
        identity = call.identity
        owner = identity.owner
        live_call = LiveCall(
            next(_call_ids),
            identity.execution_id,
            identity.step_id,
            call.request.provider,
            identity.tenant,
            identity.principal,
            owner,
        )
        return _CallState(self, live_call, self.refuses)

    def _deliver(
        self, state: _CallState, deltas: Sequence[tuple[int, str]], kind: type[ReasoningDelta] | type[TextDelta]
    ) -> None:
        if state.refused:
            return
        outlets = self._current_outlets()
        if not outlets:
            return
        if not state.started:
            state.started = True
            started = CallStarted(state.call)
            for outlet in outlets:
                outlet.offer(started)
        live = state.call
        is_text = kind is TextDelta
        origin, seq = (state.text_origin, state.text_seq) if is_text else (state.origin, state.seq)
        for index, text in deltas:
            if not text:
                continue
            seq += 1
            delta = kind(
                live.execution_id,
                live.step_id,
                live.provider,
                index,
                Untrusted(text, origin=origin),
                live.tenant,
                live.call_id,
                seq,
            )
            guarded = self._guard(delta) if self._guards else delta
            if guarded is not None:
                for outlet in outlets:
                    outlet.offer(guarded)
        if is_text:
            state.text_seq = seq
        else:
            state.seq = seq

    def _guard(self, delta: LiveDelta) -> LiveDelta | None:
        """Every guard in order, for both kinds: pass, rewrite the text only, or suppress."""
        for guard in self._guards:
            out = shielded("delta guard", guard, delta)
            if out is None:
                return None
            if not isinstance(out, ReasoningDelta | TextDelta) or type(out) is not type(delta):
                # also keeps a text delta from being turned into reasoning, or the other way round
                _warn_once("a delta guard returned neither a delta of the kind it got nor None; it is suppressed")
                return None
            if out.text.text != delta.text.text:  # a guard may change the text only, never where it goes
                delta = dataclasses.replace(delta, text=Untrusted(out.text.text, origin=delta.text.origin))
        return delta

    def _end(self, state: _CallState, outcome: str, result: Capture | None) -> None:
        if result is None and not state.started:
            return  # nothing captured and nothing streamed: nothing to tell
        outlets = [o for o in self._current_outlets() if o.observer]
        if not outlets:
            return
        refs = tuple(p.text_ref or "" for p in result.parts) if result is not None else ()
        ended = CallEnded(
            state.call,
            outcome,
            kept=any(refs),
            attempt=result.attempt if result is not None else None,
            streamed=state.started,
            refs=refs,
        )
        for outlet in outlets:
            outlet.offer(ended)

    def _current_outlets(self) -> list[_SinkDelivery]:
        configured = self._runtime.on_reasoning
        if self._outlets_for == (configured, _registry_version):
            return self._outlets  # the common case: nothing (un)registered since the last delta
        with _registered_lock:
            version = _registry_version
            candidates = [*(() if configured is None else (configured,)), *_registered]
        sinks = [s for i, s in enumerate(candidates) if all(s is not c for c in candidates[:i])]
        with self._lock:
            outlets = [next((o for o in self._outlets if o.sink is s), None) or _SinkDelivery(s) for s in sinks]
            self._outlets = outlets  # a sink no longer configured keeps draining on its own worker
            self._outlets_for = (configured, version)
            return outlets


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        logger.warning("loom-otel: %s", message)
