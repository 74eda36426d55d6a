"""One model call as the wrappers see it: the GenAI span, capture on success, status on failure.

Vendor packages describe a request (``RequestInfo``) and a response (``ResponseInfo`` plus the
``Reasoning`` items in vendor order); everything else happens here, once for every vendor.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from loom_otel.core import _attributes as attr
from loom_otel.core._callbacks import shielded
from loom_otel.core._capture import Capture, capture
from loom_otel.core._config import Runtime
from loom_otel.core._content import CONTENT_EVENT, in_event, on_span, output_content, output_reasoning
from loom_otel.core._context import current_execution
from loom_otel.core._journal import AttributeValue
from loom_otel.core._live import LiveChannel
from loom_otel.core._metrics import GenAiMetrics, metric_attributes
from loom_otel.core._model import Reasoning
from loom_otel.core._scrub import install_scrubber, remember
from loom_otel.core._semconv import SCHEMA_URL

__all__ = ["ModelCall", "ReasoningHandler", "RequestInfo", "ResponseInfo"]


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

    def span_attributes(self) -> dict[str, AttributeValue]:
        return {
            attr.GEN_AI_OPERATION_NAME: self.operation,
            attr.GEN_AI_PROVIDER_NAME: self.provider,
            attr.GEN_AI_REQUEST_MODEL: self.model,
            attr.GEN_AI_REQUEST_STREAM: self.stream,
            **self.attributes,
        }


@dataclass(frozen=True, slots=True)
class ResponseInfo:
    """What the span says at the end: response id, model, finish reasons, usage."""

    model: str | None = None
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    output_messages: Sequence[Mapping[str, Any]] | None = None
    """The answer in the conventions' message shape, without its reasoning parts (content capture on)."""


class ReasoningHandler:
    """Shared by every wrapper of one instrumentor: the tracer, the GenAI metrics and the process runtime."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        runtime: Runtime,
        name: str,
        version: str,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self.runtime = runtime
        self.tracer = trace.get_tracer(name, version, tracer_provider, schema_url=SCHEMA_URL)
        self.metrics = GenAiMetrics(meter_provider, name, version)
        shielded("installing the reasoning scrubber", install_scrubber, tracer_provider)
        self.live_sink: Callable[[ModelCall, Sequence[tuple[int, str]]], None] | None = None
        self.continuation: Any = None
        """The vendor's continuation adapter (set by the instrumentor; ``None``: requests pass unchanged)."""
        self.live_end: Callable[[ModelCall, str, Capture | None], None] | None = None
        self.live_text_sink: Callable[[ModelCall, Sequence[tuple[int, str]]], None] | None = None
        """Set only with live text on (and no guard refusing live delivery): streams then report text."""
        if runtime.live and runtime.enabled:
            channel = LiveChannel(runtime)
            self.live_sink, self.live_end = channel.deliver, channel.end
            if runtime.live_text and not channel.refuses:
                self.live_text_sink = channel.deliver_text

    def call(self, request: RequestInfo) -> ModelCall:
        """A call whose span starts now (the request is about to be sent)."""
        return ModelCall(self, request)


class _Current:
    """``with``: the span is the current span inside (a plain attach/detach, no generator)."""

    __slots__ = ("_context", "_token")

    def __init__(self, span: Span) -> None:
        self._context = trace.set_span_in_context(span)

    def __enter__(self) -> None:
        self._token = context.attach(self._context)

    def __exit__(self, *exc_info: object) -> None:
        context.detach(self._token)


class ModelCall:
    """The span of one model call and what ends it. Every ending is idempotent."""

    __slots__ = (
        "_chunked",
        "_ended",
        "_metric_attributes",
        "_started",
        "after_capture",
        "handler",
        "live",
        "request",
        "span",
    )

    def __init__(self, handler: ReasoningHandler, request: RequestInfo) -> None:
        self.handler = handler
        self.request = request
        attributes = request.span_attributes()
        self._started = time.perf_counter()
        self.span: Span = handler.tracer.start_span(
            f"{request.operation} {request.model}",
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        self._metric_attributes = metric_attributes(attributes)
        self._chunked = False
        self._ended = False
        scope = current_execution()
        if scope is not None:
            self.set_execution(scope.execution_id)
        self.live: object = None
        """The live view's per-call state (identity, guard refusal); ``None`` until it is needed."""
        self.after_capture: Callable[[Capture | None], None] | None = None
        """Run once the response's reasoning is captured (the continuation layer records bindings)."""

    def activate(self) -> _Current:
        """Make the span current while the SDK sends (its own spans and HTTP spans nest under it).

        Unlike ``trace.use_span``, nothing is written on the span when the SDK raises: the wrapper's
        ``fail`` records the error type, never the exception's message (which may quote a request).
        """
        return _Current(self.span)

    def add_event(self, name: str, attributes: Mapping[str, AttributeValue]) -> None:
        self.span.add_event(name, dict(attributes))

    def set_execution(self, execution_id: str, *, conversation: bool = True) -> None:
        """The call's execution, once known: ``loom.execution.id`` on the span (filterable, unlike the
        event's), and ``gen_ai.conversation.id`` unless an instrumentation or the app already set one.
        ``conversation=False`` for an execution derived from the trace id: the conventions say a trace
        id SHOULD NOT stand in for a conversation."""
        span = self.span
        span.set_attribute(attr.EXECUTION_ID, execution_id)
        existing = getattr(span, "attributes", None)
        if conversation and not (isinstance(existing, Mapping) and attr.GEN_AI_CONVERSATION_ID in existing):
            span.set_attribute(attr.GEN_AI_CONVERSATION_ID, execution_id)

    def first_chunk(self) -> None:
        """The stream proxy received its first chunk: time to first chunk (streamed calls only, once)."""
        if self._chunked or self._ended or not self.request.stream:
            return
        self._chunked = True
        seconds = time.perf_counter() - self._started
        shielded(
            "recording time to first chunk", self.handler.metrics.first_chunk.record, seconds, self._metric_attributes
        )

    def _record_content(self, reasonings: Sequence[Reasoning], response: ResponseInfo, result: Capture | None) -> None:
        """The answer as ``gen_ai.output.messages``, each reasoning part its reference (content capture on)."""
        mode = self.request.hints.get("content_mode")
        if not isinstance(mode, str) or response.output_messages is None:
            return
        reasoning = output_reasoning(result.parts if result is not None else (), len(reasonings))
        content = output_content(response.output_messages, reasoning)
        if on_span(mode):
            self.span.set_attributes(content)
        if in_event(mode):
            request = self.request.hints.get("content")
            self.span.add_event(CONTENT_EVENT, {**(request if isinstance(request, Mapping) else {}), **content})

    def _record_end(self, response_model: str | None, usage: Mapping[str, AttributeValue], error: str | None) -> None:
        """The duration and token usage metrics of the call that just ended (never raises)."""
        attributes = dict(self._metric_attributes)
        if response_model:
            attributes[attr.GEN_AI_RESPONSE_MODEL] = response_model
        if error is not None:
            attributes[attr.ERROR_TYPE] = error
        seconds = time.perf_counter() - self._started
        shielded("recording GenAI metrics", self.handler.metrics.record_end, attributes, seconds, usage)

    def complete(self, reasonings: Sequence[Reasoning], response: ResponseInfo) -> Capture | None:
        """Record the response and capture its reasoning; raises ``ReasoningCaptureError`` (fail-closed)."""
        if self._ended:
            return None
        self._ended = True
        span = self.span
        try:
            if response.model:
                span.set_attributes({**response.attributes, attr.GEN_AI_RESPONSE_MODEL: response.model})
            elif response.attributes:
                span.set_attributes(dict(response.attributes))
            result = capture(
                self.handler.runtime,
                span,
                reasonings,
                provider=self.request.provider,
                request_model=self.request.model,
                response_model=response.model,
            )
            if response.output_messages is not None:
                shielded("recording message content", self._record_content, reasonings, response, result)
            if result is not None:
                shielded(
                    "remembering captured reasoning for scrubbing",
                    remember,
                    reasonings,
                    result.parts,
                    span.get_span_context().trace_id,
                )
                if current_execution() is None:
                    self.set_execution(result.identity.execution_id, conversation=False)
        except BaseException as exc:
            span.set_attribute(attr.ERROR_TYPE, type(exc).__qualname__)
            span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
            span.end()
            self._record_end(response.model, response.attributes, type(exc).__qualname__)
            self._live_end("failed", None)
            raise
        span.end()
        self._record_end(response.model, response.attributes, None)
        if self.after_capture is not None:
            shielded("recording reasoning bindings", self.after_capture, result)
        self._live_end("completed", result)
        return result

    def fail(self, exc: BaseException) -> None:
        """The vendor or the transport failed: status error, nothing captured."""
        if self._ended:
            return
        self._ended = True
        self.span.set_attribute(attr.ERROR_TYPE, type(exc).__qualname__)
        self.span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
        self.span.end()
        self._record_end(None, {}, type(exc).__qualname__)
        self._live_end("failed", None)

    def abandon(self, reason: str) -> None:
        """A stream dropped without an end: close the span, capture nothing."""
        if self._ended:
            return
        self._ended = True
        self.span.set_attribute("loom.stream.outcome", reason)
        self.span.end()
        self._record_end(None, {}, reason)
        self._live_end(reason, None)

    def _live_end(self, outcome: str, result: Capture | None) -> None:
        """Tell the live view the call ended (clears its catch-up buffer; never raises)."""
        end = self.handler.live_end
        if end is not None:
            end(self, outcome, result)

    def deliver(self, deltas: Sequence[tuple[int, str]]) -> None:
        """Streamed reasoning deltas (block index, text): to the live view when one is configured."""
        sink = self.handler.live_sink
        if sink is not None:
            sink(self, deltas)

    def deliver_text(self, deltas: Sequence[tuple[int, str]]) -> None:
        """Streamed answer text deltas (block index, text): to the live view when live text is on."""
        sink = self.handler.live_text_sink
        if sink is not None:
            sink(self, deltas)

    @property
    def ended(self) -> bool:
        return self._ended
