"""The wrapt wrappers, one factory per wrapped method; sync and async twins differ only by ``await``.

The public ``generate_content(_stream)`` methods own the model-call span: one per user call, chats
included (``Chat.send_message(_stream)`` calls them). Automatic function calling and automatic
continuation send several HTTP requests inside one public call; the private per-request
``_generate_content(_stream)`` methods are wrapped too, and report each request to the call in flight
(``_TURN``): a complete hop's response is folded there, a streamed hop's chunks reach the public
stream anyway. Outside a public call the private wrappers do nothing.

Where a continuation layer hooks in: every outgoing request passes ``_hop_request`` (its kwargs, before
the SDK serializes them); every complete hop response passes ``_hop_response``; the whole call's
reasoning is known in ``_finish`` (complete) and at the end of the stream (``StreamCaptureMixin``).

``generate_content_stream`` sends nothing until iterated, so the span starts at the first iteration;
a stream never iterated records nothing.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from loom_otel.core._call import ModelCall, ReasoningHandler, RequestInfo
from loom_otel.core._streams import AsyncStreamProxy, StreamAccumulator, SyncStreamProxy
from loom_otel.instrumentation.google_genai._continuation import GeminiContinuation, GeminiSession
from loom_otel.instrumentation.google_genai._extractors import ResponseAccumulator, request_info, resumes

__all__ = [
    "async_models_generate_content",
    "async_models_generate_content_hop",
    "async_models_generate_content_stream",
    "async_models_generate_content_stream_hop",
    "models_generate_content",
    "models_generate_content_hop",
    "models_generate_content_stream",
    "models_generate_content_stream_hop",
]

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


class _Flight:
    """The call in flight: its reasoning accumulator and its continuation session (if any)."""

    __slots__ = ("session", "turn")

    def __init__(self, handler: ReasoningHandler, call: ModelCall) -> None:
        self.turn = ResponseAccumulator(call.request)
        adapter = handler.continuation
        self.session: GeminiSession | None = (
            adapter.session(call, call.request.provider, self.turn.produced)
            if isinstance(adapter, GeminiContinuation)
            else None
        )

    def accumulator(self) -> StreamAccumulator:
        return self.turn if self.session is None else self.session.tap(self.turn)


_TURN: ContextVar[_Flight | None] = ContextVar("loom_otel_gemini_turn", default=None)
"""The call in flight in this context, which the per-request wrappers report to."""


def _active(handler: ReasoningHandler) -> bool:
    return handler.runtime.enabled and is_instrumentation_enabled()


def _hop_request(flight: _Flight, kwargs: dict[str, Any]) -> dict[str, Any]:
    """One HTTP request of the call is about to be built from ``kwargs`` (model, contents, config):
    the continuation pass decides what is sent (raises ``ReasoningContinuationError`` on a store failure)."""
    flight.turn.begin_hop(resumes(kwargs))
    return kwargs if flight.session is None else flight.session.prepare(kwargs)


def _hop_response(flight: _Flight, response: Any) -> None:
    """The complete response of one HTTP request of a non-streamed call (the continuation session reads
    what it produced from the accumulator)."""
    flight.turn.feed(response)


def _finish(call: ModelCall, flight: _Flight, response: Any) -> Any:
    """The public call returned: capture every hop (fail-closed), then (redact mode) blank thought text."""
    turn = flight.turn
    if not turn.hops:  # the SDK did not go through the per-request method: the response is all there is
        turn.feed(response)
    reasonings, info = turn.result()
    call.complete(reasonings, info)
    if flight.session is not None:
        flight.session.scrub(response)
    return response


def models_generate_content(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not _active(handler):
            return wrapped(*args, **kwargs)
        call = handler.call(request_info(instance, kwargs, stream=False))
        flight = _Flight(handler, call)
        token = _TURN.set(flight)
        try:
            with call.activate():
                response = wrapped(*args, **kwargs)
        except BaseException as exc:
            call.fail(exc)
            raise
        finally:
            _TURN.reset(token)
        return _finish(call, flight, response)

    return traced_method


def async_models_generate_content(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not _active(handler):
            return wrapped(*args, **kwargs)

        async def send() -> Any:
            call = handler.call(request_info(instance, kwargs, stream=False))
            flight = _Flight(handler, call)
            token = _TURN.set(flight)
            try:
                with call.activate():
                    response = await wrapped(*args, **kwargs)
            except BaseException as exc:
                call.fail(exc)
                raise
            finally:
                _TURN.reset(token)
            return _finish(call, flight, response)

        return send()

    return traced_method


def models_generate_content_stream(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not _active(handler):
            return wrapped(*args, **kwargs)
        return _stream(handler, request_info(instance, kwargs, stream=True), wrapped(*args, **kwargs))

    return traced_method


def async_models_generate_content_stream(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not _active(handler):
            return wrapped(*args, **kwargs)

        async def send() -> Any:
            chunks = await wrapped(*args, **kwargs)  # an async generator: nothing is sent yet
            return _async_stream(handler, request_info(instance, kwargs, stream=True), chunks)

        return send()

    return traced_method


def _stream(handler: ReasoningHandler, request: RequestInfo, chunks: Iterator[Any]) -> Iterator[Any]:
    """A generator like the SDK's: the span starts when iteration starts. Each step runs in one
    context prepared once (the call in flight set, the span current), so nothing leaks to the caller
    and a chunk costs one ``Context.run`` instead of a set/attach/detach/reset per step."""
    call = handler.call(request)
    turn = _Flight(handler, call)
    proxy = SyncStreamProxy(chunks, call, turn.accumulator())
    context = contextvars.copy_context()
    context.run(_enter, turn, call)
    step = iter(proxy).__next__  # the proxy's own generator: one resume per chunk
    try:
        while True:
            try:
                chunk = context.run(step)
            except StopIteration:
                return
            yield chunk
    finally:
        proxy.close()  # closed early: the SDK stream closes, what was received is captured; else a no-op


def _enter(turn: _Flight, call: ModelCall) -> None:
    """Inside the stream's own context copy: its tokens are dropped with the copy, never reset."""
    _TURN.set(turn)
    otel_context.attach(trace.set_span_in_context(call.span))


async def _async_stream(
    handler: ReasoningHandler, request: RequestInfo, chunks: AsyncIterator[Any]
) -> AsyncIterator[Any]:
    call = handler.call(request)
    turn = _Flight(handler, call)
    proxy = AsyncStreamProxy(chunks, call, turn.accumulator())
    current = trace.set_span_in_context(call.span)
    step = aiter(proxy).__anext__  # the proxy's own async generator: one resume per chunk
    try:
        while True:
            token, otel_token = _TURN.set(turn), otel_context.attach(current)
            try:
                chunk = await step()
            except StopAsyncIteration:
                return
            finally:
                otel_context.detach(otel_token)
                _TURN.reset(token)
            yield chunk
    finally:
        await proxy.close()


def models_generate_content_hop(handler: ReasoningHandler) -> Wrapper:
    """``Models._generate_content``: one HTTP request of a complete call."""

    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        turn = _TURN.get()
        if turn is None:
            return wrapped(*args, **kwargs)
        response = wrapped(*args, **_hop_request(turn, kwargs))
        _hop_response(turn, response)
        return response

    return traced_method


def async_models_generate_content_hop(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        turn = _TURN.get()
        if turn is None:
            return wrapped(*args, **kwargs)

        async def send() -> Any:
            response = await wrapped(*args, **_hop_request(turn, kwargs))
            _hop_response(turn, response)
            return response

        return send()

    return traced_method


def models_generate_content_stream_hop(handler: ReasoningHandler) -> Wrapper:
    """``Models._generate_content_stream`` (a generator function, called when its hop starts)."""

    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        turn = _TURN.get()
        if turn is not None:
            kwargs = _hop_request(turn, kwargs)
        return wrapped(*args, **kwargs)

    return traced_method


# ``AsyncModels._generate_content_stream`` is awaited where its hop starts; marking the hop at the
# call is the same moment.
async_models_generate_content_stream_hop = models_generate_content_stream_hop
