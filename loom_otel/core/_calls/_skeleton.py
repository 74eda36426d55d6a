"""The one call sequence every wrapped SDK method runs, for every vendor (``_adapter.VendorAdapter``):

1. guard: ``check_request`` refuses reasoning in an instruction position;
2. prepare: the continuation pass decides what is sent and finds the request's lineage;
3. start: the GenAI span starts, the call's execution is decided (``ModelCall.join``), the pass's
   decisions become span events;
4. send: ``with sending(call, outgoing)``, the SDK method runs with the span (and the call) current,
   below any other GenAI instrumentation's wrapper of it (one span per call); a failure ends the call
   with its error type (``failed``) and is re-raised unchanged;
5. the result: core's one dispatch over the vendor's readers (``VendorAdapter.readers``,
   ``_results.ResultReaders``) reads a whole response and hands it to ``finish``, or wraps the stream
   (``_streams``), whose end (or early close) hands what it received to the same ``finish``;
6. finish: the vendor's drops (``Outgoing.dropped``), the call's finishing steps (``_complete``: the
   response's attributes, the capture, fail-closed, the content, the span's end),
   the bindings of what was produced (``Outgoing.bound``), the application's copy scrubbed
   (``Outgoing.scrub``), and last the watcher told (``ModelCall.tell_completed``).

Methods that send later than they are called (a stream manager sends when entered, a generator when
iterated, an operation whose streaming is known only from its name) hold one ``DeferredSend``: steps
1-2 when it is made, steps 3-4 when it sends (``run`` / ``run_async``; ``send`` with step 5 too; for a
generator, ``stream`` / ``stream_async``: steps 3-5 at its first step), so no vendor runs the steps itself.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Iterator, Sequence
from types import TracebackType
from typing import Any, TypeVar

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from loom_otel.core._calls._adapter import Outgoing, Results
from loom_otel.core._calls._capture import Capture
from loom_otel.core._calls._handler import ReasoningHandler
from loom_otel.core._calls._model_call import Activation, ModelCall, ResponseInfo
from loom_otel.core._calls._peers import peer_outside, without_peers
from loom_otel.core._calls._withheld import withhold_from_exception, withhold_from_request
from loom_otel.core._evidence._model import Reasoning
from loom_otel.core._runtime._callbacks import shielded

__all__ = [
    "DeferredSend",
    "Wrapper",
    "active",
    "async_method",
    "delivered",
    "failed",
    "finish",
    "prepare",
    "sending",
    "sent",
    "start",
    "sync_method",
]

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]
"""A wrapt wrapper: ``traced_method(wrapped, instance, args, kwargs)``."""

T = TypeVar("T")


def active(handler: ReasoningHandler) -> bool:
    """Capture is on and instrumentation is not suppressed in this context."""
    return handler.runtime.enabled and is_instrumentation_enabled()


def prepare(handler: ReasoningHandler, instance: Any, kwargs: dict[str, Any]) -> Outgoing | None:
    """Steps 1 and 2: the request guard, then the continuation pass."""
    adapter = handler.adapter
    adapter.check_request(instance, kwargs)
    outgoing: Outgoing | None = adapter.prepare(instance, kwargs)
    return outgoing


def start(
    handler: ReasoningHandler,
    instance: Any,
    kwargs: dict[str, Any],
    outgoing: Outgoing | None,
    *,
    stream: bool,
    wrapped: object = None,
) -> ModelCall:
    """Step 3: the span starts (one GenAI span per call, beside other instrumentations of ``wrapped``);
    the call joins the request's lineage (else its identity is decided now); the decisions become
    events."""
    request = handler.adapter.request_info(instance, kwargs, stream=stream)
    call = handler.call(request, peer_outside=peer_outside(wrapped, instance))
    call.outgoing = outgoing
    call.sent = kwargs
    if outgoing is None:
        call.join(None)
    else:
        outgoing.attach(call)
    return call


def sent(kwargs: dict[str, Any], outgoing: Outgoing | None) -> dict[str, Any]:
    """The keyword arguments the SDK gets."""
    return kwargs if outgoing is None else outgoing.kwargs


class sending(Activation):  # named for its use, as contextlib's closing: one object per send
    """Step 4: ``with sending(call, outgoing):`` around whatever sends the request (the SDK method, a
    stream manager's ``__enter__``): the call's span and the call are current inside; an exception ends
    the call (``failed``) and goes on unchanged."""

    __slots__ = ("_outgoing",)

    def __init__(self, call: ModelCall, outgoing: Outgoing | None) -> None:
        Activation.__init__(self, call)  # not super(): no proxy object per send
        self._outgoing = outgoing

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        Activation.__exit__(self, exc_type, exc, tb)
        if exc is not None:
            failed(self._call, self._outgoing, exc)


def failed(call: ModelCall, outgoing: Outgoing | None, exc: BaseException) -> None:
    """The SDK raised: the call ends with the error type; the texts loom-otel put back into the request
    (redact mode, or a block the application altered in keep mode) are taken out of the exception (its
    message, body, request and response) before the application gets it, unchanged otherwise."""
    call.fail(exc)
    if outgoing is not None:
        withhold_from_exception(exc, outgoing.put_back())


def delivered(call: ModelCall, outgoing: Outgoing | None, result: Any) -> Any:
    """The SDK returned ``result``: the texts loom-otel put back into the request are taken out of the
    HTTP request it holds (a raw response's ``http_request``, a stream's ``response.request``)."""
    if outgoing is not None:
        texts = outgoing.put_back()
        if texts:
            withhold_from_request(result, texts)
    return result


def _complete(call: ModelCall, reasonings: Sequence[Reasoning], info: ResponseInfo) -> Capture | None:
    """The call's own finishing steps, in order, once: the response's attributes, the capture (raises
    ``ReasoningCaptureError``: fail-closed, the span ends with its type), the message content, the
    omitted-reasoning warning, what was captured kept for scrubbing, then the span's end and metrics."""
    if not call.begin_end():
        return None
    try:
        call.record_response(info)
        result = call.capture(reasonings, info)
        call.record_content(reasonings, info, result)
        call.warn_omitted(reasonings)
        call.remember_captured(reasonings, info, result)
    except BaseException as exc:
        call.end_failed(exc, info)
        raise
    call.end_completed(info)
    return result


def finish(
    call: ModelCall,
    outgoing: Outgoing | None,
    response: Any,
    reasonings: Sequence[Reasoning],
    info: ResponseInfo,
) -> None:
    """Step 6, once per call, for a whole response (``response``) and a stream's end (``response`` is
    the accumulator it fed) alike, the ordered step list: the vendor's own drops as events, the call's
    finishing steps (``_complete``: the capture raises ``ReasoningCaptureError``, fail-closed, the call
    has ended with its type), the bindings of what was produced (a failure is logged: the call is kept),
    the application's copy scrubbed, the watcher told."""
    if outgoing is None:
        call.tell_completed(_complete(call, reasonings, info))
        return
    outgoing.dropped(call, response)
    capture = _complete(call, reasonings, info)
    shielded("recording reasoning bindings", outgoing.bound, call, response, capture, reasonings)
    try:
        outgoing.scrub(response)
    finally:
        call.tell_completed(capture)


class DeferredSend:
    """One request sent later than its SDK method is called: made at the call (``open``: the guard and
    the continuation pass, steps 1-2), it sends once (``run`` / ``run_async``: the span starts, the send
    runs current and below other instrumentations, a failure ends the call, the result's request is
    cleaned; ``send`` also hands the result to the vendor's readers; ``stream`` / ``stream_async`` for a
    generator, which sends when iterated)."""

    __slots__ = ("_handler", "_instance", "_kwargs", "_wrapped", "outgoing")

    def __init__(
        self, handler: ReasoningHandler, instance: Any, kwargs: dict[str, Any], wrapped: Callable[..., Any]
    ) -> None:
        self._handler = handler
        self._instance = instance
        self._kwargs = kwargs
        self._wrapped = wrapped
        self.outgoing: Outgoing | None = prepare(handler, instance, kwargs)

    @classmethod
    def open(
        cls, handler: ReasoningHandler, instance: Any, kwargs: dict[str, Any], wrapped: Callable[..., Any]
    ) -> DeferredSend | None:
        """Steps 1-2 now; ``None`` when capture is off or instrumentation suppressed (call the SDK as is)."""
        return cls(handler, instance, kwargs, wrapped) if active(handler) else None

    @property
    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments (or the API parameters) the SDK gets."""
        return sent(self._kwargs, self.outgoing)

    def sdk(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped SDK method, called below any other GenAI instrumentation's wrapper of it."""
        return without_peers(self._wrapped)(*args, **kwargs)

    def _begin(self, *, stream: bool = True) -> ModelCall:
        """Step 3: the call starts."""
        return start(self._handler, self._instance, self._kwargs, self.outgoing, stream=stream, wrapped=self._wrapped)

    def run(self, send: Callable[[], T], *, stream: bool = True) -> tuple[ModelCall, T]:
        """Steps 3-4 around ``send`` (a manager's ``__enter__``, the SDK method)."""
        call = self._begin(stream=stream)
        with sending(call, self.outgoing):
            result = send()
        return call, delivered(call, self.outgoing, result)

    async def run_async(self, send: Callable[[], Awaitable[T]], *, stream: bool = True) -> tuple[ModelCall, T]:
        """``run`` for an awaited send."""
        call = self._begin(stream=stream)
        with sending(call, self.outgoing):
            result = await send()
        return call, delivered(call, self.outgoing, result)

    def send(self, send: Callable[[], Any], *, stream: bool) -> Any:
        """Steps 3-6: ``run``, then what ``send`` returned goes through the vendor's readers (a whole
        response finished, a stream under a proxy)."""
        call, result = self.run(send, stream=stream)
        return self._readers().sync_result(call, self.outgoing, result)

    def stream(self, chunks: Generator[Any, None, None]) -> Iterator[Any]:
        """What the application gets for the SDK's generator ``chunks``, which sends when iterated: the
        call starts at the first step, the stream goes through the vendor's readers (a stream proxy), and
        every step runs with the call current (its failure ends the call, as a send's does)."""
        return _DeferredStream(self, chunks)

    def stream_async(self, chunks: AsyncGenerator[Any, None]) -> AsyncIterator[Any]:
        """``stream`` for the SDK's async generator."""
        return _DeferredAsyncStream(self, chunks)

    def _proxied(self, chunks: Any) -> tuple[ModelCall, Any]:
        """A generator's first step: the call starts, the generator is delivered (its request cleaned)."""
        call = self._begin()
        return call, delivered(call, self.outgoing, chunks)

    def _readers(self) -> Results:
        readers: Results = self._handler.adapter.readers
        return readers


class _DeferredStream:
    """A generator's stream (``DeferredSend.stream``): an iterator like the SDK's generator. Its steps run
    in one context prepared at the first (the call current, its span current), so nothing leaks to the
    caller and a chunk costs one ``Context.run``. Closed, the stream ends ``closed_early``; dropped
    without a close, ``abandoned`` (the stream proxy's), as a stream object's does; never iterated, it
    records nothing (nothing was sent)."""

    __slots__ = ("_chunks", "_context", "_deferred", "_iterator", "_proxy", "_step")

    def __init__(self, deferred: DeferredSend, chunks: Generator[Any, None, None]) -> None:
        self._deferred = deferred
        self._chunks = chunks
        self._step: Callable[[], Any] | None = None
        self._proxy: Any = None

    def __iter__(self) -> _DeferredStream:
        return self

    def __next__(self) -> Any:
        step = self._step
        if step is None:
            step = self._start()
        return self._context.run(step)

    def _start(self) -> Callable[[], Any]:
        deferred = self._deferred
        call, chunks = deferred._proxied(self._chunks)
        self._proxy = deferred._readers().sync_result(call, deferred.outgoing, chunks)
        self._context = contextvars.copy_context()
        self._context.run(call.make_current)
        self._iterator = iter(self._proxy)  # the proxy's own generator: one resume per chunk
        step: Callable[[], Any] = self._iterator.__next__
        self._step = step
        return step

    def close(self) -> None:
        """Closed early: the SDK's generator closes, what was received is captured (once started)."""
        if self._proxy is None:
            self._chunks.close()
            return
        self._iterator.close()
        self._proxy.close()


class _DeferredAsyncStream:
    """The async twin of ``_DeferredStream`` (each step with the call activated)."""

    __slots__ = ("_call", "_chunks", "_deferred", "_iterator", "_proxy", "_step")

    def __init__(self, deferred: DeferredSend, chunks: AsyncGenerator[Any, None]) -> None:
        self._deferred = deferred
        self._chunks = chunks
        self._step: Callable[[], Awaitable[Any]] | None = None
        self._proxy: Any = None

    def __aiter__(self) -> _DeferredAsyncStream:
        return self

    async def __anext__(self) -> Any:
        step = self._step
        if step is None:
            step = await self._start()
        with self._call.activate():
            return await step()

    async def _start(self) -> Callable[[], Awaitable[Any]]:
        deferred = self._deferred
        call, chunks = deferred._proxied(self._chunks)
        self._call = call
        self._proxy = await deferred._readers().async_result(call, deferred.outgoing, chunks)
        self._iterator = aiter(self._proxy)  # the proxy's own async generator: one resume per chunk
        step: Callable[[], Awaitable[Any]] = self._iterator.__anext__
        self._step = step
        return step

    async def aclose(self) -> None:
        """Closed early: the SDK's generator closes, what was received is captured (once started)."""
        if self._proxy is None:
            await self._chunks.aclose()
            return
        await self._iterator.aclose()
        await self._proxy.close()


def sync_method(handler: ReasoningHandler) -> Wrapper:
    """Steps 1-6 for a sync method that sends when called."""

    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not active(handler):
            return wrapped(*args, **kwargs)
        adapter = handler.adapter
        outgoing = prepare(handler, instance, kwargs)
        call = start(handler, instance, kwargs, outgoing, stream=adapter.streams(kwargs), wrapped=wrapped)
        with sending(call, outgoing):
            result = without_peers(wrapped)(*args, **sent(kwargs, outgoing))
        return adapter.readers.sync_result(call, outgoing, delivered(call, outgoing, result))

    return traced_method


def async_method(handler: ReasoningHandler) -> Wrapper:
    """Steps 1-6 for an async method (it returns an awaitable; nothing runs until it is awaited)."""

    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not active(handler):
            return wrapped(*args, **kwargs)

        async def send() -> Any:
            adapter = handler.adapter
            outgoing = prepare(handler, instance, kwargs)
            call = start(handler, instance, kwargs, outgoing, stream=adapter.streams(kwargs), wrapped=wrapped)
            with sending(call, outgoing):
                result = await without_peers(wrapped)(*args, **sent(kwargs, outgoing))
            return await adapter.readers.async_result(call, outgoing, delivered(call, outgoing, result))

        return send()

    return traced_method
