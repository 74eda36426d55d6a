"""The wrapt wrappers, one factory per wrapped method; sync and async twins differ only by ``await``.

``create`` and ``parse`` run the core's call skeleton as they are (``parse`` is a non-streaming create
with a parser). ``Messages.stream`` returns a manager that sends nothing until entered: the guard and
the continuation pass run when it is made (the helper binds the request body then), the call starts in
``__enter__``, and the stream proxy hangs under the ``MessageStream`` it returns, so every way of
consuming it (iteration, ``text_stream``, ``get_final_message()``) is seen.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import wrapt

from loom_otel.core._adapter_kit import (
    AsyncStreamProxy,
    ModelCall,
    Outgoing,
    Reasoning,
    ReasoningHandler,
    ResponseInfo,
    StreamAccumulator,
    SyncStreamProxy,
    Wrapper,
    active,
    async_method,
    current_call,
    delivered,
    failed,
    prepare,
    sent,
    start,
    sync_method,
    without_peers,
)
from loom_otel.core.exceptions import ReasoningCaptureError
from loom_otel.instrumentation.anthropic._adapter import AnthropicAdapter, outgoing_of
from loom_otel.instrumentation.anthropic._extractors import reasonings_of, response_info
from loom_otel.instrumentation.anthropic._guard import check_anthropic_batch_request

__all__ = [
    "async_messages_create",
    "async_messages_stream",
    "batches_create",
    "messages_create",
    "messages_stream",
    "sdk_call_span",
]


def messages_create(handler: ReasoningHandler) -> Wrapper:
    """``Messages.create`` and ``Messages.parse``."""
    return sync_method(handler)


def async_messages_create(handler: ReasoningHandler) -> Wrapper:
    return async_method(handler)


def batches_create(handler: ReasoningHandler) -> Wrapper:
    """``Batches.create`` (sync and async): the request guard on every ``requests[i].params`` before the
    SDK serializes them. Batch results are not captured (the README says so)."""

    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if active(handler):
            requests = kwargs.get("requests")
            if requests is not None and not isinstance(requests, list | tuple):
                kwargs = {**kwargs, "requests": list(requests)}  # any iterable: read once, sent as read
            check_anthropic_batch_request(kwargs)
        return wrapped(*args, **kwargs)

    return traced_method


def sdk_call_span(handler: ReasoningHandler) -> Wrapper:
    """``anthropic._base_client.start_api_call_span``: the SDK's own span of an API call. Inside a
    loom-otel model call it would be a second GenAI span of the same call (a backend counts its tokens
    twice), so none starts; the SDK then sends as it does without tracing. Outside, it is untouched."""

    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if current_call() is not None:
            return None
        return wrapped(*args, **kwargs)

    return traced_method


class _Snapshot:
    """``messages.stream()`` keeps the message it streams (``current_message_snapshot``): with no live
    view and no redaction, capture reads it once when the stream ends, as for a complete response,
    instead of taking every event apart a second time.

    The stream is held weakly: it holds this accumulator (through the proxy of its raw stream), and a
    strong reference would make a cycle that only the garbage collector frees, keeping the stream, the
    proxy, the call and the whole response (some 70 objects) alive until a collection. ``result`` runs
    from the stream's own iteration or ``close()``, while the stream is alive."""

    text_deltas: list[tuple[int, str]] | None = None
    reads_whole_response = True

    def __init__(self, stream: Any, call: ModelCall) -> None:
        self._stream = _weakly(stream)
        self._call = call

    def feed(self, event: Any) -> Sequence[tuple[int, str]]:
        return ()

    def result(self) -> tuple[list[Reasoning], ResponseInfo]:
        stream = self._stream()
        if stream is None:  # only a raw stream taken out of its helper stream and read after that was freed
            raise ReasoningCaptureError("the messages.stream() stream was freed before its end: capture fails closed")
        try:
            message = stream.current_message_snapshot
        except AssertionError:  # closed before message_start: nothing arrived
            return [], ResponseInfo()
        outgoing = outgoing_of(self._call)
        if outgoing is not None:
            outgoing.finish(self._call, message)
        return reasonings_of(message, self._call.request), response_info(message, self._call.request)


def _weakly(stream: Any) -> Callable[[], Any]:
    """A weak reference to ``stream``; a strong one for a stream type without weak references."""
    try:
        return weakref.ref(stream)
    except TypeError:
        return lambda: stream


def _helper_accumulator(handler: ReasoningHandler, call: ModelCall, stream: Any) -> StreamAccumulator:
    """The helper's stream: read its snapshot, unless events must be seen one by one (live view, blanked thinking)."""
    adapter = handler.adapter
    assert isinstance(adapter, AnthropicAdapter)
    outgoing = outgoing_of(call)
    if call.handler.observe is not None or (outgoing is not None and outgoing.blanks):
        return adapter.accumulator(call)
    return _Snapshot(stream, call)


def _manager_wrapper(handler: ReasoningHandler, proxy: type[_StreamManagerProxy | _AsyncStreamManagerProxy]) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not active(handler):
            return wrapped(*args, **kwargs)
        outgoing = prepare(handler, instance, kwargs)  # the helper binds the request body now
        manager = without_peers(wrapped)(*args, **sent(kwargs, outgoing))
        return proxy(manager, handler, instance, kwargs, outgoing=outgoing, wrapped=wrapped)

    return traced_method


def messages_stream(handler: ReasoningHandler) -> Wrapper:
    return _manager_wrapper(handler, _StreamManagerProxy)


def async_messages_stream(handler: ReasoningHandler) -> Wrapper:
    return _manager_wrapper(handler, _AsyncStreamManagerProxy)


class _ManagerProxy(wrapt.BaseObjectProxy[Any]):
    """The state both stream-manager proxies keep; the call starts when the manager is entered."""

    def __init__(
        self,
        manager: Any,
        handler: ReasoningHandler,
        instance: Any,
        kwargs: dict[str, Any],
        *,
        outgoing: Outgoing | None,
        wrapped: object,
    ) -> None:
        super().__init__(manager)
        self._self_handler = handler
        self._self_instance = instance
        self._self_kwargs = kwargs
        self._self_outgoing = outgoing
        self._self_method = wrapped

    def _start(self) -> ModelCall:
        handler, instance, kwargs = self._self_handler, self._self_instance, self._self_kwargs
        return start(handler, instance, kwargs, self._self_outgoing, stream=True, wrapped=self._self_method)


class _StreamManagerProxy(_ManagerProxy):
    """``MessageStreamManager``: nothing is sent, and nothing recorded, until ``__enter__``."""

    def __enter__(self) -> Any:
        call = self._start()
        try:
            with call.activate():
                stream = self.__wrapped__.__enter__()
        except BaseException as exc:
            failed(call, exc)
            raise
        delivered(call, stream)
        stream._raw_stream = SyncStreamProxy(
            stream._raw_stream, call, _helper_accumulator(self._self_handler, call, stream)
        )
        return stream

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Any:
        return self.__wrapped__.__exit__(exc_type, exc, tb)


class _AsyncStreamManagerProxy(_ManagerProxy):
    """``AsyncMessageStreamManager``: the request is sent in ``__aenter__``."""

    async def __aenter__(self) -> Any:
        call = self._start()
        try:
            with call.activate():
                stream = await self.__wrapped__.__aenter__()
        except BaseException as exc:
            failed(call, exc)
            raise
        delivered(call, stream)
        stream._raw_stream = AsyncStreamProxy(
            stream._raw_stream, call, _helper_accumulator(self._self_handler, call, stream)
        )
        return stream

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Any:
        return await self.__wrapped__.__aexit__(exc_type, exc, tb)
