"""The wrapt wrappers, one factory per wrapped method; sync and async twins differ only by ``await``.

``create`` and ``parse`` run the core's call skeleton as they are (``parse`` is a non-streaming create
with a parser). ``Messages.stream`` returns a manager that sends nothing until entered: the guard and
the continuation pass run when it is made (the helper binds the request body then), the call starts in
``__enter__``, and the stream proxy hangs under the ``MessageStream`` it returns, so every way of
consuming it (iteration, ``text_stream``, ``get_final_message()``) is seen.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import TracebackType
from typing import Any

import wrapt

from loom_otel.core.vendor import (
    AsyncStreamProxy,
    DeferredSend,
    ModelCall,
    Outgoing,
    ReasoningHandler,
    StreamAccumulator,
    SyncStreamProxy,
    Wrapper,
    async_method,
    sync_method,
)
from loom_otel.core.vendor_helpers import active, current_call
from loom_otel.instrumentation.anthropic import _continuation, _stream_layers
from loom_otel.instrumentation.anthropic._extractors import MessageStreamAccumulator
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


@functools.cache
def _snapshot_counts_thinking_tokens() -> bool:
    """The helper's snapshot keeps the ``message_delta`` usage's ``output_tokens_details`` from anthropic
    0.122 on; before, it keeps no thinking token count (the events carry it)."""
    import anthropic

    release = tuple(int(part) for part in anthropic.__version__.split(".")[:2] if part.isdigit())
    return release >= (0, 122)


def _helper_accumulator(call: ModelCall, outgoing: Outgoing | None, stream: Any) -> StreamAccumulator:
    """The helper's stream: read its snapshot, unless events must be seen one by one (live view, blanked
    thinking, a snapshot without the thinking token count)."""
    if (
        call.handler.observe is not None
        or (isinstance(outgoing, _continuation.Outgoing) and outgoing.blanks)
        or not _snapshot_counts_thinking_tokens()
    ):
        return MessageStreamAccumulator(call.request)
    return _stream_layers.Snapshot(stream, call.request)


def _manager_wrapper(handler: ReasoningHandler, proxy: type[_StreamManagerProxy | _AsyncStreamManagerProxy]) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        deferred = DeferredSend.open(handler, instance, kwargs, wrapped)
        if deferred is None:
            return wrapped(*args, **kwargs)
        manager = deferred.sdk(*args, **deferred.kwargs)  # the helper binds the request body now
        return proxy(manager, deferred)

    return traced_method


def messages_stream(handler: ReasoningHandler) -> Wrapper:
    return _manager_wrapper(handler, _StreamManagerProxy)


def async_messages_stream(handler: ReasoningHandler) -> Wrapper:
    return _manager_wrapper(handler, _AsyncStreamManagerProxy)


class _ManagerProxy(wrapt.BaseObjectProxy[Any]):
    """The send both stream-manager proxies keep; the call starts when the manager is entered."""

    def __init__(self, manager: Any, deferred: DeferredSend) -> None:
        super().__init__(manager)
        self._self_deferred = deferred


class _StreamManagerProxy(_ManagerProxy):
    """``MessageStreamManager``: nothing is sent, and nothing recorded, until ``__enter__``."""

    def __enter__(self) -> Any:
        deferred = self._self_deferred
        call, stream = deferred.run(self.__wrapped__.__enter__)
        outgoing = deferred.outgoing
        accumulator = _helper_accumulator(call, outgoing, stream)
        stream._raw_stream = SyncStreamProxy(stream._raw_stream, call, outgoing, accumulator)
        return stream

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Any:
        return self.__wrapped__.__exit__(exc_type, exc, tb)


class _AsyncStreamManagerProxy(_ManagerProxy):
    """``AsyncMessageStreamManager``: the request is sent in ``__aenter__``."""

    async def __aenter__(self) -> Any:
        deferred = self._self_deferred
        call, stream = await deferred.run_async(self.__wrapped__.__aenter__)
        outgoing = deferred.outgoing
        accumulator = _helper_accumulator(call, outgoing, stream)
        stream._raw_stream = AsyncStreamProxy(stream._raw_stream, call, outgoing, accumulator)
        return stream

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Any:
        return await self.__wrapped__.__aexit__(exc_type, exc, tb)
