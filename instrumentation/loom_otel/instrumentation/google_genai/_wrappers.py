"""The wrapt wrappers, one factory per wrapped method; sync and async twins differ only by ``await``.

The public ``generate_content(_stream)`` methods own the model-call span and run the core's call
skeleton: one call per user call, chats included (``Chat.send_message(_stream)`` calls them).
Automatic function calling and automatic continuation send several HTTP requests inside one public
call; the private per-request ``_generate_content(_stream)`` methods are wrapped too, and report each
request to the call in flight (``current_call()``, its ``CallHops``): the continuation pass plans the
request, and a complete request's response is folded into the call. Outside a public call the private
wrappers do nothing.

``generate_content_stream`` sends nothing until iterated: the guard runs when it is called, and its
generator goes through ``DeferredSend.stream`` (the span starts at the first iteration, as a stream
manager's at ``__enter__``; a stream never iterated records nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loom_otel.core.vendor import DeferredSend, ReasoningHandler, Wrapper, async_method, sync_method
from loom_otel.core.vendor_helpers import active, current_call
from loom_otel.instrumentation.google_genai._adapter import hops_of

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


def models_generate_content(handler: ReasoningHandler) -> Wrapper:
    return sync_method(handler)


def async_models_generate_content(handler: ReasoningHandler) -> Wrapper:
    return async_method(handler)


def models_generate_content_stream(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        deferred = DeferredSend.open(handler, instance, kwargs, wrapped)  # the guard, now; the pass runs per request
        if deferred is None:
            return wrapped(*args, **kwargs)
        return deferred.stream(wrapped(*args, **kwargs))

    return traced_method


def async_models_generate_content_stream(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not active(handler):
            return wrapped(*args, **kwargs)

        async def send() -> Any:
            deferred = DeferredSend(handler, instance, kwargs, wrapped)
            chunks = await wrapped(*args, **kwargs)  # an async generator: nothing is sent yet
            return deferred.stream_async(chunks)

        return send()

    return traced_method


def models_generate_content_hop(handler: ReasoningHandler) -> Wrapper:
    """``Models._generate_content``: one HTTP request of a complete call."""

    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = current_call()
        hops = hops_of(call)
        if call is None or hops is None:
            return wrapped(*args, **kwargs)
        response = wrapped(*args, **hops.request(call, kwargs))
        hops.response(response)
        return response

    return traced_method


def async_models_generate_content_hop(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = current_call()
        hops = hops_of(call)
        if call is None or hops is None:
            return wrapped(*args, **kwargs)

        async def send() -> Any:
            response = await wrapped(*args, **hops.request(call, kwargs))
            hops.response(response)
            return response

        return send()

    return traced_method


def models_generate_content_stream_hop(handler: ReasoningHandler) -> Wrapper:
    """``Models._generate_content_stream`` (a generator function, called when its request starts)."""

    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = current_call()
        hops = hops_of(call)
        if call is not None and hops is not None:
            kwargs = hops.request(call, kwargs)
        return wrapped(*args, **kwargs)

    return traced_method


# ``AsyncModels._generate_content_stream`` is awaited where its request starts; reporting the request
# at the call is the same moment.
async_models_generate_content_stream_hop = models_generate_content_stream_hop
