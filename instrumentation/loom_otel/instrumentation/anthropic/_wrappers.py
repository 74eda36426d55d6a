"""The wrapt wrappers, one factory per wrapped method; sync and async twins differ only by ``await``.

``Messages.parse`` goes through ``messages_create`` (it is a non-streaming create with a parser).
``Messages.stream`` returns a manager that sends nothing until entered: its proxy starts the call in
``__enter__`` and hangs the stream proxy under the ``MessageStream`` it returns, so every way of
consuming it (iteration, ``text_stream``, ``get_final_message()``) is seen.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import wrapt
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from loom_otel.core._call import ModelCall, ReasoningHandler, ResponseInfo
from loom_otel.core._guard import check_anthropic_request
from loom_otel.core._model import Reasoning
from loom_otel.core._streams import AsyncStreamProxy, SyncStreamProxy
from loom_otel.core._streams import StreamAccumulator as Accumulator
from loom_otel.instrumentation.anthropic._continuation import AnthropicContinuation, Outgoing
from loom_otel.instrumentation.anthropic._extractors import (
    StreamAccumulator,
    provider_of,
    reasonings_of,
    request_info,
    response_info,
)

__all__ = ["async_messages_create", "async_messages_stream", "messages_create", "messages_stream"]

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


def _active(handler: ReasoningHandler) -> bool:
    return handler.runtime.enabled and is_instrumentation_enabled()


def _is_raw(result: Any) -> bool:
    """``with_raw_response`` / ``with_streaming_response`` hand the wrapper an ``APIResponse``."""
    return isinstance(result, _raw_response_type())


@functools.cache
def _raw_response_type() -> type:
    from anthropic._response import BaseAPIResponse  # the SDK is imported by then; resolved once

    return BaseAPIResponse


def _complete(call: ModelCall, message: Any, outgoing: Outgoing | None) -> None:
    """Capture, record the bindings of what was produced, then (redact mode) blank readable thinking."""
    if outgoing is not None:
        outgoing.finish(call, message)
    call.complete(reasonings_of(message, call.request), response_info(message))
    if outgoing is not None:
        outgoing.scrub(message)


def _accumulator(call: ModelCall, outgoing: Outgoing | None) -> Accumulator:
    inner = StreamAccumulator(call.request)
    return inner if outgoing is None else outgoing.accumulator(call, inner)


class _Snapshot:
    """``messages.stream()`` keeps the message it streams (``current_message_snapshot``): with no live
    view and no redaction, capture reads it once when the stream ends, as for a complete response,
    instead of taking every event apart a second time."""

    text_deltas: list[tuple[int, str]] | None = None
    reads_whole_response = True

    def __init__(self, stream: Any, call: ModelCall, outgoing: Outgoing | None) -> None:
        self._stream = stream
        self._call = call
        self._outgoing = outgoing

    def feed(self, event: Any) -> Sequence[tuple[int, str]]:
        return ()

    def result(self) -> tuple[list[Reasoning], ResponseInfo]:
        try:
            message = self._stream.current_message_snapshot
        except AssertionError:  # closed before message_start: nothing arrived
            return [], ResponseInfo()
        if self._outgoing is not None:
            self._outgoing.finish(self._call, message)
        return reasonings_of(message, self._call.request), response_info(message)


def _helper_accumulator(call: ModelCall, stream: Any, outgoing: Outgoing | None) -> Accumulator:
    """The helper's stream: read its snapshot, unless events must be seen one by one (live view, redact)."""
    if call.handler.live_sink is not None or (outgoing is not None and outgoing.adapter.redact):
        return _accumulator(call, outgoing)
    return _Snapshot(stream, call, outgoing)


def _prepare(handler: ReasoningHandler, instance: Any, kwargs: dict[str, Any]) -> Outgoing | None:
    """Refuse untrusted text in instruction positions, then run the continuation pass on the request the
    SDK is about to serialize (``None``: no continuation configured)."""
    check_anthropic_request(kwargs)
    continuation = handler.continuation
    if not isinstance(continuation, AnthropicContinuation):
        return None
    return continuation.prepare(provider_of(instance), kwargs)


def _sync_result(call: ModelCall, result: Any, outgoing: Outgoing | None) -> Any:
    if _is_raw(result):
        if call.request.stream:
            return _RawResponseProxy(result, call, outgoing)
        _complete(call, result.parse(), outgoing)
        return result
    if call.request.stream:
        return SyncStreamProxy(result, call, _accumulator(call, outgoing))
    _complete(call, result, outgoing)
    return result


async def _async_result(call: ModelCall, result: Any, outgoing: Outgoing | None) -> Any:
    if _is_raw(result):
        if call.request.stream:
            return _AsyncRawResponseProxy(result, call, outgoing)
        _complete(call, await result.parse(), outgoing)
        return result
    if call.request.stream:
        return AsyncStreamProxy(result, call, _accumulator(call, outgoing))
    _complete(call, result, outgoing)
    return result


def messages_create(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not _active(handler):
            return wrapped(*args, **kwargs)
        call = handler.call(request_info(instance, kwargs, stream=bool(kwargs.get("stream"))))
        try:
            outgoing = _prepare(handler, instance, kwargs)
            if outgoing is not None:
                outgoing.emit(call)
                kwargs = outgoing.kwargs
            with call.activate():
                result = wrapped(*args, **kwargs)
        except BaseException as exc:
            call.fail(exc)
            raise
        return _sync_result(call, result, outgoing)

    return traced_method


def async_messages_create(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not _active(handler):
            return wrapped(*args, **kwargs)

        async def send() -> Any:
            call = handler.call(request_info(instance, kwargs, stream=bool(kwargs.get("stream"))))
            try:
                outgoing = _prepare(handler, instance, kwargs)
                sent = kwargs
                if outgoing is not None:
                    outgoing.emit(call)
                    sent = outgoing.kwargs
                with call.activate():
                    result = await wrapped(*args, **sent)
            except BaseException as exc:
                call.fail(exc)
                raise
            return await _async_result(call, result, outgoing)

        return send()

    return traced_method


def _manager_wrapper(handler: ReasoningHandler, proxy: type[_StreamManagerProxy | _AsyncStreamManagerProxy]) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not _active(handler):
            return wrapped(*args, **kwargs)
        # The helper binds the request body now: the pass runs here, its events when the span starts.
        outgoing = _prepare(handler, instance, kwargs)
        manager = wrapped(*args, **(outgoing.kwargs if outgoing is not None else kwargs))
        return proxy(manager, handler, instance, kwargs, outgoing)

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
        outgoing: Outgoing | None = None,
    ) -> None:
        super().__init__(manager)
        self._self_handler = handler
        self._self_instance = instance
        self._self_kwargs = kwargs
        self._self_outgoing = outgoing

    def _start(self) -> ModelCall:
        call = self._self_handler.call(request_info(self._self_instance, self._self_kwargs, stream=True))
        if self._self_outgoing is not None:
            self._self_outgoing.emit(call)
        return call


class _StreamManagerProxy(_ManagerProxy):
    """``MessageStreamManager``: nothing is sent, and nothing recorded, until ``__enter__``."""

    def __enter__(self) -> Any:
        call = self._start()
        try:
            with call.activate():
                stream = self.__wrapped__.__enter__()
        except BaseException as exc:
            call.fail(exc)
            raise
        stream._raw_stream = SyncStreamProxy(
            stream._raw_stream, call, _helper_accumulator(call, stream, self._self_outgoing)
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
            call.fail(exc)
            raise
        stream._raw_stream = AsyncStreamProxy(
            stream._raw_stream, call, _helper_accumulator(call, stream, self._self_outgoing)
        )
        return stream

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Any:
        return await self.__wrapped__.__aexit__(exc_type, exc, tb)


class _RawResponseProxy(wrapt.BaseObjectProxy[Any]):
    """A raw streaming response: the stream the application parses out of it is captured."""

    def __init__(self, response: Any, call: ModelCall, outgoing: Outgoing | None = None) -> None:
        super().__init__(response)
        self._self_call = call
        self._self_outgoing = outgoing

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        parsed = self.__wrapped__.parse(*args, **kwargs)
        if isinstance(parsed, SyncStreamProxy) or not hasattr(parsed, "__next__"):
            return parsed
        return SyncStreamProxy(parsed, self._self_call, _accumulator(self._self_call, self._self_outgoing))


class _AsyncRawResponseProxy(wrapt.BaseObjectProxy[Any]):
    def __init__(self, response: Any, call: ModelCall, outgoing: Outgoing | None = None) -> None:
        super().__init__(response)
        self._self_call = call
        self._self_outgoing = outgoing

    async def parse(self, *args: Any, **kwargs: Any) -> Any:
        parsed = await self.__wrapped__.parse(*args, **kwargs)
        if isinstance(parsed, AsyncStreamProxy) or not hasattr(parsed, "__anext__"):
            return parsed
        return AsyncStreamProxy(parsed, self._self_call, _accumulator(self._self_call, self._self_outgoing))
