"""The wrapt wrappers, one factory per wrapped method; sync and async twins differ only by ``await``.

``Messages.parse`` goes through ``messages_create`` (it is a non-streaming create with a parser).
``Messages.stream`` returns a manager that sends nothing until entered: its proxy starts the call in
``__enter__`` and hangs the stream proxy under the ``MessageStream`` it returns, so every way of
consuming it (iteration, ``text_stream``, ``get_final_message()``) is seen.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any

import wrapt
from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from loom_otel.core._call import ModelCall, ReasoningHandler
from loom_otel.core._streams import AsyncStreamProxy, SyncStreamProxy
from loom_otel.instrumentation.anthropic._extractors import (
    StreamAccumulator,
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
    from anthropic._response import BaseAPIResponse

    return isinstance(result, BaseAPIResponse)


def _complete(call: ModelCall, message: Any) -> None:
    call.complete(reasonings_of(message, call.request), response_info(message))


def _sync_result(call: ModelCall, result: Any) -> Any:
    if _is_raw(result):
        if call.request.stream:
            return _RawResponseProxy(result, call)
        _complete(call, result.parse())
        return result
    if call.request.stream:
        return SyncStreamProxy(result, call, StreamAccumulator(call.request))
    _complete(call, result)
    return result


async def _async_result(call: ModelCall, result: Any) -> Any:
    if _is_raw(result):
        if call.request.stream:
            return _AsyncRawResponseProxy(result, call)
        _complete(call, await result.parse())
        return result
    if call.request.stream:
        return AsyncStreamProxy(result, call, StreamAccumulator(call.request))
    _complete(call, result)
    return result


def messages_create(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not _active(handler):
            return wrapped(*args, **kwargs)
        call = handler.call(request_info(instance, kwargs, stream=bool(kwargs.get("stream"))))
        try:
            with call.activate():
                result = wrapped(*args, **kwargs)
        except BaseException as exc:
            call.fail(exc)
            raise
        return _sync_result(call, result)

    return traced_method


def async_messages_create(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not _active(handler):
            return wrapped(*args, **kwargs)

        async def send() -> Any:
            call = handler.call(request_info(instance, kwargs, stream=bool(kwargs.get("stream"))))
            try:
                with call.activate():
                    result = await wrapped(*args, **kwargs)
            except BaseException as exc:
                call.fail(exc)
                raise
            return await _async_result(call, result)

        return send()

    return traced_method


def messages_stream(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        manager = wrapped(*args, **kwargs)
        if not _active(handler):
            return manager
        return _StreamManagerProxy(manager, handler, instance, kwargs)

    return traced_method


def async_messages_stream(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        manager = wrapped(*args, **kwargs)
        if not _active(handler):
            return manager
        return _AsyncStreamManagerProxy(manager, handler, instance, kwargs)

    return traced_method


class _ManagerMixin:
    _self_handler: ReasoningHandler
    _self_instance: Any
    _self_kwargs: dict[str, Any]

    def _start(self) -> ModelCall:
        return self._self_handler.call(request_info(self._self_instance, self._self_kwargs, stream=True))


class _StreamManagerProxy(_ManagerMixin, wrapt.BaseObjectProxy[Any]):
    """``MessageStreamManager``: nothing is sent, and nothing recorded, until ``__enter__``."""

    def __init__(self, manager: Any, handler: ReasoningHandler, instance: Any, kwargs: dict[str, Any]) -> None:
        super().__init__(manager)
        self._self_handler = handler
        self._self_instance = instance
        self._self_kwargs = kwargs

    def __enter__(self) -> Any:
        call = self._start()
        try:
            with call.activate():
                stream = self.__wrapped__.__enter__()
        except BaseException as exc:
            call.fail(exc)
            raise
        stream._raw_stream = SyncStreamProxy(stream._raw_stream, call, StreamAccumulator(call.request))
        return stream

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Any:
        return self.__wrapped__.__exit__(exc_type, exc, tb)


class _AsyncStreamManagerProxy(_ManagerMixin, wrapt.BaseObjectProxy[Any]):
    """``AsyncMessageStreamManager``: the request is sent in ``__aenter__``."""

    def __init__(self, manager: Any, handler: ReasoningHandler, instance: Any, kwargs: dict[str, Any]) -> None:
        super().__init__(manager)
        self._self_handler = handler
        self._self_instance = instance
        self._self_kwargs = kwargs

    async def __aenter__(self) -> Any:
        call = self._start()
        try:
            with call.activate():
                stream = await self.__wrapped__.__aenter__()
        except BaseException as exc:
            call.fail(exc)
            raise
        stream._raw_stream = AsyncStreamProxy(stream._raw_stream, call, StreamAccumulator(call.request))
        return stream

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Any:
        return await self.__wrapped__.__aexit__(exc_type, exc, tb)


class _RawResponseProxy(wrapt.BaseObjectProxy[Any]):
    """A raw streaming response: the stream the application parses out of it is captured."""

    def __init__(self, response: Any, call: ModelCall) -> None:
        super().__init__(response)
        self._self_call = call

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        parsed = self.__wrapped__.parse(*args, **kwargs)
        if isinstance(parsed, SyncStreamProxy) or not hasattr(parsed, "__next__"):
            return parsed
        return SyncStreamProxy(parsed, self._self_call, StreamAccumulator(self._self_call.request))


class _AsyncRawResponseProxy(wrapt.BaseObjectProxy[Any]):
    def __init__(self, response: Any, call: ModelCall) -> None:
        super().__init__(response)
        self._self_call = call

    async def parse(self, *args: Any, **kwargs: Any) -> Any:
        parsed = await self.__wrapped__.parse(*args, **kwargs)
        if isinstance(parsed, AsyncStreamProxy) or not hasattr(parsed, "__anext__"):
            return parsed
        return AsyncStreamProxy(parsed, self._self_call, StreamAccumulator(self._self_call.request))
