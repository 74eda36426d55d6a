"""One model call as the call skeleton sees it: the GenAI span, whose the call is, capture on success,
status on failure.

Vendor packages describe a request (``RequestInfo``) and a response (``ResponseInfo`` plus the
``Reasoning`` items in vendor order); everything else happens here, once for every vendor.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Protocol

from opentelemetry import context, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from loom_otel.core import environment_variables as env
from loom_otel.core._calls._as_built import set_attributes
from loom_otel.core._calls._capture import Capture, capture
from loom_otel.core._calls._content import CONTENT_EVENT, in_event, on_span, output_content, output_reasoning
from loom_otel.core._calls._identity import CallIdentity, baggage_principal, decide
from loom_otel.core._calls._keep import Keeping, keeping
from loom_otel.core._calls._metrics import GenAiMetrics, metric_attributes
from loom_otel.core._calls._observer import CallObserver
from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._evidence._attributes import AttributeValue
from loom_otel.core._evidence._model import Reasoning, ReasoningKind
from loom_otel.core._evidence._store._protocol import ReasoningStore
from loom_otel.core._runtime._callbacks import shielded
from loom_otel.core._runtime._context import ExecutionScope, current_execution, current_step
from loom_otel.core._runtime._warnings import warn
from loom_otel.core._scrub import remember
from loom_otel.core.exceptions import ReasoningCaptureError

if TYPE_CHECKING:
    from loom_otel.core._runtime._config import Runtime

__all__ = ["Activation", "CallHandler", "ModelCall", "RequestInfo", "ResponseInfo", "current_call"]

_CURRENT: ContextVar[ModelCall | None] = ContextVar("loom_otel_call", default=None)


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What the span says at start (GenAI conventions), from the request the SDK will send."""

    provider: str
    operation: str
    model: str
    stream: bool = False
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    hints: Mapping[str, object] = field(default_factory=dict)
    """Vendor-private facts the vendor mapping needs again for the response (never exported)."""
    thinking: Mapping[str, AttributeValue] = field(default_factory=dict)
    """The request's thinking settings (``loom.request.thinking.*``): on the span and in the capture."""

    @property
    def records_content(self) -> bool:
        """The request was recorded with its content (``content_mode``, read once per call at its start):
        so is the answer."""
        return "content_mode" in self.hints

    def span_attributes(self) -> dict[str, AttributeValue]:
        return {
            attr.GEN_AI_OPERATION_NAME: self.operation,
            attr.GEN_AI_PROVIDER_NAME: self.provider,
            attr.GEN_AI_REQUEST_MODEL: self.model,
            attr.GEN_AI_REQUEST_STREAM: self.stream,
            **self.attributes,
            **self.thinking,
        }


@dataclass(frozen=True, slots=True)
class ResponseInfo:
    """What the span says at the end: response id, model, finish reasons, usage."""

    model: str | None = None
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    output_messages: Sequence[Mapping[str, Any]] | None = None
    """The answer in the conventions' message shape, without its reasoning parts: recorded with content capture
    on; the scrubber reads it always (what the call returned visibly is no secret)."""
    layout: tuple[str, ...] = ()
    """The response's reasoning parts, text blocks and tool calls in vendor order (``core._evidence._layout``)."""


class CallHandler(Protocol):
    """What a call uses of the handler that started it (``_handler.ReasoningHandler``): named here, so
    that the call needs nothing of the modules built on it."""

    @property
    def runtime(self) -> Runtime: ...

    @property
    def tracer(self) -> Tracer: ...

    @property
    def metrics(self) -> GenAiMetrics: ...

    @property
    def observe(self) -> Callable[[ModelCall], CallObserver] | None:
        """Starts the watcher of one call (the live view's), or ``None``."""
        ...


def current_call() -> ModelCall | None:
    """The model call whose SDK method is running in this context (the per-request hooks report to it)."""
    return _CURRENT.get()


class Activation:
    """``with``: the span is the current span and the call the current call inside (a plain
    attach/detach, no generator)."""

    __slots__ = ("_call", "_call_token", "_context", "_token")

    def __init__(self, call: ModelCall) -> None:
        self._call = call
        self._context = trace.set_span_in_context(call.span)

    def __enter__(self) -> None:
        self._token = context.attach(self._context)
        self._call_token = _CURRENT.set(self._call)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _CURRENT.reset(self._call_token)
        context.detach(self._token)


class ModelCall:
    """The span of one model call and what ends it. Every ending is idempotent."""

    __slots__ = (
        "__weakref__",
        "_chunked",
        "_ended",
        "_explicit",
        "_genai",
        "_identified",
        "_identity",
        "_kept",
        "_metric_attributes",
        "_owns_span",
        "_started",
        "_step",
        "handler",
        "observer",
        "outgoing",
        "request",
        "sent",
        "span",
    )

    def __init__(
        self, handler: CallHandler, request: RequestInfo, shared: Span | None = None, *, genai: bool = True
    ) -> None:
        self.handler = handler
        self.request = request
        self.sent: Mapping[str, Any] | None = None
        """The keyword arguments the application called with (the scrubber leaves what they show alone)."""
        self._owns_span = shared is None
        self._genai = genai and shared is None
        self._started = time.perf_counter()
        self._chunked = False
        self._explicit = current_execution()
        self._step = current_step()
        self._identified = False
        """Whether the span already carries the call's execution (set at its start when a scope is explicit)."""
        attributes = request.span_attributes()
        self._metric_attributes = metric_attributes(attributes)
        if shared is not None:
            self.span: Span = shared
        else:
            if genai:
                name, kind = f"{request.operation} {request.model}", SpanKind.CLIENT
            else:
                name, kind, attributes = f"loom.reasoning {request.model}", SpanKind.INTERNAL, {}
            if self._explicit is not None:  # known before the span starts: one attribute write, not two
                attributes.update(self._identity_attributes(self._explicit.execution_id, attributes))
                self._identified = True
            self.span = handler.tracer.start_span(name, kind=kind, attributes=attributes)
        """The model-call span: loom-otel's own; or (``shared``) the one another instrumentation started
        for this call, which loom-otel adds its events and attributes to and never ends; or (not
        ``genai``) loom-otel's own without GenAI attributes, beside another instrumentation's."""
        self._ended = False
        self._identity: CallIdentity | None = None
        self.outgoing: object = None
        """The request after the continuation pass (the skeleton's ``Outgoing``, ``None`` without one),
        for the vendor's per-request hooks that find the call through ``current_call()``; core hands the
        ``Outgoing`` to each step itself and never reads it here."""
        self.observer: CallObserver | None = None
        """What watches this call (``handler.observe``); ``None`` until the call has something to tell."""
        self._kept: Keeping | None = None
        """Where this call's readable texts go, once decided (``_keep.keeping``: the predicate runs once)."""

    def activate(self) -> Activation:
        """Make the span (and this call) current while the SDK sends: HTTP spans nest under it, and
        per-request hooks find the call (``current_call()``).

        Unlike ``trace.use_span``, nothing is written on the span when the SDK raises: the wrapper's
        ``fail`` records the error type, never the exception's message (which may quote a request).
        """
        return Activation(self)

    def make_current(self) -> None:
        """Make the span and the call current for good: only inside a context copy of the caller's own
        (a stream's steps run in one; its tokens are dropped with the copy, never reset)."""
        context.attach(trace.set_span_in_context(self.span))
        _CURRENT.set(self)

    # -- identity: DESIGN "Execution identity", decided once (``loom_otel.core._calls._identity``) ----------

    def request_scope(self) -> ExecutionScope | None:
        """The execution a request of this call may read reasoning back from, if already known (an
        explicit scope, or the decided identity); ``None``: the request's lineage decides."""
        if self._explicit is not None:
            return self._explicit
        return self._identity.scope if self._identity is not None else None

    def join(self, lineage: ExecutionScope | None) -> CallIdentity:
        """Decide the call's identity now, joining ``lineage`` (the execution the request's own reasoning
        blocks belong to) unless a scope is explicit; once decided, later calls change nothing. The span
        gets it with its last attributes (``_last_attributes``)."""
        if self._identity is None:
            principal = baggage_principal(self.handler.runtime.principal_baggage)
            self._identity = decide(self.span.get_span_context(), self._explicit, lineage, self._step, principal)
        return self._identity

    def _last_attributes(self, attributes: dict[str, AttributeValue]) -> None:
        """Set ``attributes`` as the call ends, with the call's execution when the span does not carry it
        yet (one write, not two)."""
        span = self.span
        if not self._identified:
            self._identified = True
            if span.is_recording():
                existing = getattr(span, "attributes", None)
                attributes.update(self._identity_attributes(self.identity.execution_id, existing))
        if attributes:
            set_attributes(span, attributes)

    def _identity_attributes(
        self, execution_id: str, existing: Mapping[str, object] | None
    ) -> dict[str, AttributeValue]:
        """``loom.execution.id``; ``gen_ai.conversation.id`` too, on a GenAI span where nothing else set
        one (``existing``: the span's attributes so far)."""
        if (self._owns_span and not self._genai) or (existing is not None and attr.GEN_AI_CONVERSATION_ID in existing):
            return {attr.EXECUTION_ID: execution_id}
        return {attr.EXECUTION_ID: execution_id, attr.GEN_AI_CONVERSATION_ID: execution_id}

    @property
    def identity(self) -> CallIdentity:
        """Whose the call is (decided at the first request, or now when no request decided it)."""
        return self._identity if self._identity is not None else self.join(None)

    def add_event(self, name: str, attributes: Mapping[str, AttributeValue]) -> None:
        self.span.add_event(name, dict(attributes))

    def first_chunk(self) -> None:
        """The stream proxy received its first chunk: time to first chunk (streamed calls only, once)."""
        if self._chunked or self._ended or not self.request.stream:
            return
        self._chunked = True
        if self._genai:
            seconds = time.perf_counter() - self._started
            first_chunk = self.handler.metrics.first_chunk.record
            shielded("recording time to first chunk", first_chunk, seconds, self._metric_attributes)

    def _record_content(self, reasonings: Sequence[Reasoning], response: ResponseInfo, result: Capture | None) -> None:
        """The answer as ``gen_ai.output.messages``, each reasoning part its reference (content capture on)."""
        mode = self.request.hints.get("content_mode")
        if not isinstance(mode, str) or response.output_messages is None:
            return
        url = result.attributes.get(attr.REASONING_URL) if result is not None else None
        reasoning = output_reasoning(result.parts if result is not None else (), len(reasonings), url)
        content = output_content(response.output_messages, reasoning)
        if on_span(mode):
            self.span.set_attributes(content)
        if in_event(mode):
            request = self.request.hints.get("content")
            self.span.add_event(CONTENT_EVENT, {**(request if isinstance(request, Mapping) else {}), **content})

    def _record_end(self, response_model: str | None, usage: Mapping[str, AttributeValue], error: str | None) -> None:
        """The duration and token usage metrics of the call that just ended (never raises); none where
        another instrumentation's span is the call's GenAI span (it counts the call)."""
        if not self._genai:
            return
        attributes = dict(self._metric_attributes)
        if response_model:
            attributes[attr.GEN_AI_RESPONSE_MODEL] = response_model
        if error is not None:
            attributes[attr.ERROR_TYPE] = error
        seconds = time.perf_counter() - self._started
        shielded("recording GenAI metrics", self.handler.metrics.record_end, attributes, seconds, usage)

    def begin_end(self) -> bool:
        """The call ends now, once: ``False`` if it already ended (failed, abandoned or finished)."""
        if self._ended:
            return False
        self._ended = True
        return True

    def record_response(self, response: ResponseInfo) -> None:
        """The response's attributes as the span's last ones (on loom-otel's own GenAI span only: else the
        other instrumentation records the response on its span)."""
        last: dict[str, AttributeValue] = {}
        if self._genai:
            last.update(response.attributes)
            reasoning_tokens = last.get(attr.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS)
            if reasoning_tokens is not None:
                last[attr.OPENINFERENCE_REASONING_TOKENS] = reasoning_tokens
            if response.model:
                last[attr.GEN_AI_RESPONSE_MODEL] = response.model
        self._last_attributes(last)

    def keeping(self) -> ReasoningStore | None:
        """The store this call's readable texts go to (``None``: none is kept), decided once per call, for
        the capture and the live view alike; raises ``ReasoningCaptureError`` as ``_keep.keeping`` does
        (not remembered: the capture raises it again)."""
        return self._keeping().store

    def _keeping(self) -> Keeping:
        if self._kept is None:
            request = self.request
            self._kept = keeping(self.handler.runtime, self.identity, self._explicit, request.provider, request.model)
        return self._kept

    def capture(self, reasonings: Sequence[Reasoning], response: ResponseInfo) -> Capture | None:
        """Capture the response's reasoning under the call's identity; raises ``ReasoningCaptureError``
        (fail-closed)."""
        return capture(
            self.handler.runtime,
            self.span,
            reasonings,
            provider=self.request.provider,
            request_model=self.request.model,
            response_model=response.model,
            identity=self.identity,
            request_attributes=self.request.thinking,
            layout=response.layout,
            scope=self._explicit,
            keeping=self.keeping,
        )

    def record_content(self, reasonings: Sequence[Reasoning], response: ResponseInfo, result: Capture | None) -> None:
        """The answer as message content, when content capture is on (never raises)."""
        if response.output_messages is not None and self._genai:
            shielded("recording message content", self._record_content, reasonings, response, result)

    def warn_omitted(self, reasonings: Sequence[Reasoning]) -> None:
        """Warn, once per process, of reasoning with nothing readable (never raises)."""
        runtime, provider = self.handler.runtime, self.request.provider
        shielded("warning of omitted reasoning", _warn_if_only_omitted, runtime, provider, reasonings)

    def remember_captured(
        self, reasonings: Sequence[Reasoning], response: ResponseInfo, result: Capture | None
    ) -> None:
        """What was captured, kept for scrubbing other instrumentations' telemetry of it (never raises)."""
        if result is None:
            return
        trace_id = self.span.get_span_context().trace_id
        visible = (self.sent, response.output_messages)
        shielded("remembering captured reasoning for scrubbing", remember, reasonings, result.parts, trace_id, visible)

    def end_completed(self, response: ResponseInfo) -> None:
        """The span ends; the duration and usage metrics are recorded."""
        self._end()
        self._record_end(response.model, response.attributes, None)

    def end_failed(self, exc: BaseException, response: ResponseInfo) -> None:
        """A finishing step raised: the span ends with its error type (the watcher is told)."""
        self._end_with_error(exc)
        self._record_end(response.model, response.attributes, type(exc).__qualname__)

    def tell_completed(self, result: Capture | None) -> None:
        """The call's finish is done (the capture, then the bindings): the watcher is told, last."""
        self._tell_end("completed", result)

    def fail(self, exc: BaseException) -> None:
        """The vendor or the transport failed: status error, nothing captured."""
        if self._ended:
            return
        self._ended = True
        self._end_with_error(exc)
        self._record_end(None, {}, type(exc).__qualname__)

    def abandon(self, reason: str) -> None:
        """A stream dropped without an end: close the span, capture nothing."""
        if self._ended:
            return
        self._ended = True
        self._last_attributes({attr.STREAM_OUTCOME: reason})
        self._end()
        self._record_end(None, {}, reason)
        self._tell_end(reason, None)

    def _end(self) -> None:
        if self._owns_span:
            self.span.end()

    def _end_with_error(self, exc: BaseException) -> None:
        """The error type only, never the message (it may quote a request); the watcher is told."""
        error = type(exc).__qualname__
        self._last_attributes({attr.ERROR_TYPE: error} if self._owns_span else {})
        if self._owns_span:
            self.span.set_status(Status(StatusCode.ERROR, error))
            self.span.end()
        self._tell_end("failed", None)

    def watched(self) -> CallObserver | None:
        """The call's observer, started at the first thing the call tells it; ``None``: nobody watches, or
        capture is off for this call though a store is there (``execution(capture=False)``, the predicate,
        capture off): what the application chose not to keep is not shown live either."""
        observer = self.observer
        if observer is None and self.handler.observe is not None and self._shown_live():
            observer = self.observer = self.handler.observe(self)
        return observer

    def _shown_live(self) -> bool:
        try:
            return not self._keeping().declined
        except ReasoningCaptureError:  # the capture fails closed with it; nothing is shown meanwhile
            return False

    def _tell_end(self, outcome: str, result: Capture | None) -> None:
        """Tell the watcher the call ended, unless it was told nothing and nothing was captured (the live
        view clears its catch-up buffer; never raises)."""
        if result is None and self.observer is None:
            return
        observer = self.watched()
        if observer is not None:
            observer.ended(outcome, result)

    @property
    def ended(self) -> bool:
        return self._ended


# The one warning of a process whose calls return reasoning with nothing readable in it (DESIGN
# "Readable by request"): an Anthropic display that is omitted, a Gemini call without ``include_thoughts``,
# a Responses call without ``reasoning.summary``; it names the setting that asks for readable reasoning.

_OMITTED_ONCE: Final = ("loom-otel", "omitted reasoning")


def _only_omitted(reasonings: Sequence[Reasoning]) -> bool:
    """The response had thinking blocks, and none of them carried readable text (redacted blocks are
    the vendor's encryption, not an omission: they neither count nor prevent)."""
    readable = [r for r in reasonings if r.kind is not ReasoningKind.REDACTED]
    return bool(readable) and not any(r.text for r in readable)


def _warn_if_only_omitted(runtime: Runtime, provider: str, reasonings: Sequence[Reasoning]) -> None:
    """Warn once per process when a call returned only omitted reasoning and loom-otel does not ask
    for readable reasoning."""
    if runtime.request_readable != "off" or not _only_omitted(reasonings):
        return
    warn(
        f"{provider} returned reasoning with no readable text (the application asked for thinking "
        "without it): only signatures and sizes are recorded. Set "
        f"{env.LOOM_OTEL_REQUEST_READABLE}=summarized (with {env.LOOM_OTEL_REASONING_STORE}) to ask the "
        "vendor for readable reasoning, keep it, and still hand the application what it asked for",
        once=_OMITTED_ONCE,
    )
