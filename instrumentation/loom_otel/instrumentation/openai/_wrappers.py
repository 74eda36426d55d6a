"""The wrapt wrappers, one factory per wrapped method; sync and async twins differ only by ``await``.

``create`` (stream or not) and ``parse`` of Chat Completions and of the Responses API are wrapped; the
``stream()`` helpers call ``create(stream=True)`` when entered, so they are seen through it once (no
double count), and ``parse()`` posts on its own (no ``create`` inside). ``with_raw_response`` results are
parsed (the body is already read; the SDK caches the parse); a raw streaming response is not read:
its span ends with ``loom.stream.outcome = "raw_response"`` and nothing captured.

Where a continuation layer hooks in: the outgoing kwargs pass ``traced_method`` just before
``wrapped(*args, **kwargs)``; the complete response is known in ``_complete`` and the accumulated
stream at its end (``StreamCaptureMixin``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from loom_otel.core._call import ModelCall, ReasoningHandler
from loom_otel.core._streams import AsyncStreamProxy, SyncStreamProxy
from loom_otel.instrumentation.openai._continuation import OpenAiContinuation, Outgoing
from loom_otel.instrumentation.openai._extractors import CHAT, RESPONSES, Api

__all__ = [
    "async_chat_completions_create",
    "async_responses_create",
    "chat_completions_create",
    "responses_create",
]

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]
StreamProxy = type[SyncStreamProxy] | type[AsyncStreamProxy]


def _active(handler: ReasoningHandler) -> bool:
    return handler.runtime.enabled and is_instrumentation_enabled()


def _complete(call: ModelCall, api: Api, response: Any, outgoing: Outgoing | None) -> None:
    """The complete response is known: vendor drops, capture (fail-closed), then (redact) scrub."""
    if outgoing is not None:
        outgoing.finish(response)
    call.complete(api.reasonings_of(response, call.request), api.response_info(response))
    if outgoing is not None:
        outgoing.scrub(response)


def _prepare(handler: ReasoningHandler, api: Api, call: ModelCall, kwargs: dict[str, Any]) -> Outgoing | None:
    """The continuation pass on the request the SDK is about to serialize (``None``: none configured)."""
    adapter = handler.continuation
    if not isinstance(adapter, OpenAiContinuation):
        return None
    return adapter.prepare(call, api is CHAT, kwargs)


def _result(call: ModelCall, api: Api, result: Any, proxy: StreamProxy, outgoing: Outgoing | None) -> Any:
    from openai._legacy_response import LegacyAPIResponse
    from openai._response import BaseAPIResponse

    if isinstance(result, LegacyAPIResponse) and not call.request.stream:
        _complete(call, api, result.parse(), outgoing)
        return result
    if isinstance(result, LegacyAPIResponse | BaseAPIResponse):
        call.abandon("raw_response")
        return result
    if call.request.stream:
        accumulator = api.accumulator(call.request)
        return proxy(result, call, accumulator if outgoing is None else outgoing.tap(accumulator))
    _complete(call, api, result, outgoing)
    return result


def _create(handler: ReasoningHandler, api: Api) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not _active(handler):
            return wrapped(*args, **kwargs)
        call = handler.call(api.request_info(instance, kwargs, kwargs.get("stream") is True))
        try:
            outgoing = _prepare(handler, api, call, kwargs)
            with call.activate():
                result = wrapped(*args, **(outgoing.kwargs if outgoing is not None else kwargs))
        except BaseException as exc:
            call.fail(exc)
            raise
        return _result(call, api, result, SyncStreamProxy, outgoing)

    return traced_method


def _async_create(handler: ReasoningHandler, api: Api) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not _active(handler):
            return wrapped(*args, **kwargs)

        async def send() -> Any:
            call = handler.call(api.request_info(instance, kwargs, kwargs.get("stream") is True))
            try:
                outgoing = _prepare(handler, api, call, kwargs)
                with call.activate():
                    result = await wrapped(*args, **(outgoing.kwargs if outgoing is not None else kwargs))
            except BaseException as exc:
                call.fail(exc)
                raise
            return _result(call, api, result, AsyncStreamProxy, outgoing)

        return send()

    return traced_method


def chat_completions_create(handler: ReasoningHandler) -> Wrapper:
    """``Completions.create`` and ``Completions.parse``."""
    return _create(handler, CHAT)


def async_chat_completions_create(handler: ReasoningHandler) -> Wrapper:
    return _async_create(handler, CHAT)


def responses_create(handler: ReasoningHandler) -> Wrapper:
    """``Responses.create`` and ``Responses.parse``."""
    return _create(handler, RESPONSES)


def async_responses_create(handler: ReasoningHandler) -> Wrapper:
    return _async_create(handler, RESPONSES)
