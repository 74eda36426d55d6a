"""The Anthropic Messages API as the call skeleton's vendor (``loom_otel.core._calls._adapter.VendorAdapter``)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import wrapt

from loom_otel.core._adapter_kit import (
    AsyncStreamProxy,
    ModelCall,
    Reasoning,
    RequestInfo,
    Runtime,
    SyncStreamProxy,
    finish,
    withhold_from_response,
)
from loom_otel.instrumentation.anthropic._continuation import AnthropicContinuation, Outgoing
from loom_otel.instrumentation.anthropic._extractors import (
    MessageStreamAccumulator,
    provider_of,
    reasonings_of,
    request_info,
    response_info,
)
from loom_otel.instrumentation.anthropic._guard import check_anthropic_request
from loom_otel.instrumentation.anthropic._readable import readable_thinking

__all__ = ["AnthropicAdapter"]


@functools.cache
def _raw_response_type() -> type[Any]:
    from anthropic._response import BaseAPIResponse  # the SDK is imported by then; resolved once

    return BaseAPIResponse


class AnthropicAdapter:
    """Messages ``create`` / ``parse`` / ``stream`` of the first-party, beta, Vertex and Bedrock clients."""

    def __init__(self, runtime: Runtime) -> None:
        self.continuation = AnthropicContinuation(runtime) if runtime.enabled else None
        self.readable = runtime.enabled and runtime.request_readable == "summarized"

    def check_request(self, instance: Any, kwargs: Mapping[str, Any]) -> None:
        check_anthropic_request(kwargs)

    def prepare(self, instance: Any, kwargs: dict[str, Any]) -> Outgoing | None:
        continuation = self.continuation
        outgoing = None if continuation is None else continuation.prepare(provider_of(instance), kwargs)
        thinking = self._readable(kwargs) if outgoing is not None else None
        if outgoing is not None and thinking is not None:  # DESIGN "Readable by request"
            outgoing.kwargs = {**outgoing.kwargs, "thinking": thinking}
            outgoing.readable = True
        return outgoing

    def _readable(self, kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
        """The thinking setting that asks for the summary the application did not ask for, when
        ``LOOM_OTEL_REQUEST_READABLE`` is on (a server-held thread's next turn is left alone: nothing
        of it comes back to be put back)."""
        if not self.readable or _continues_thread(kwargs):
            return None
        return readable_thinking(kwargs)

    def streams(self, kwargs: Mapping[str, Any]) -> bool:
        return bool(kwargs.get("stream"))

    def request_info(self, instance: Any, kwargs: Mapping[str, Any], *, stream: bool) -> RequestInfo:
        readable = self.continuation is not None and self._readable(kwargs) is not None
        return request_info(instance, kwargs, stream=stream, readable=readable)

    def sync_result(self, call: ModelCall, outgoing: Outgoing | None, result: Any) -> Any:
        if isinstance(result, _raw_response_type()):
            if call.request.stream:
                return _RawResponseProxy(result, call, outgoing)
            _finish_raw(call, outgoing, result, result.parse())
            return result
        if call.request.stream:
            return SyncStreamProxy(result, call, outgoing, MessageStreamAccumulator(call.request))
        _finish(call, outgoing, result)
        return result

    async def async_result(self, call: ModelCall, outgoing: Outgoing | None, result: Any) -> Any:
        if isinstance(result, _raw_response_type()):
            if call.request.stream:
                return _AsyncRawResponseProxy(result, call, outgoing)
            _finish_raw(call, outgoing, result, await result.parse())
            return result
        if call.request.stream:
            return AsyncStreamProxy(result, call, outgoing, MessageStreamAccumulator(call.request))
        _finish(call, outgoing, result)
        return result


def _finish(call: ModelCall, outgoing: Outgoing | None, message: Any) -> list[Reasoning]:
    """A whole message, read, through the skeleton's ``finish``; its reasoning returned."""
    reasonings = reasonings_of(message, call.request)
    finish(call, outgoing, message, reasonings, response_info(message, call.request))
    return reasonings


def _finish_raw(call: ModelCall, outgoing: Outgoing | None, raw: Any, message: Any) -> None:
    """``with_raw_response``: the parsed message as a whole message; in redact mode the raw body loses
    the reasoning text too."""
    reasonings = _finish(call, outgoing, message)
    if outgoing is not None and outgoing.blanks:
        withhold_from_response(raw.http_response, [r.text for r in reasonings if r.text])


def _continues_thread(kwargs: Mapping[str, Any]) -> bool:
    thread = kwargs.get("thread")
    return isinstance(thread, Mapping) and thread.get("type") == "continue"


class _RawResponseProxy(wrapt.BaseObjectProxy[Any]):
    """A raw streaming response (``with_raw_response``): the stream the application parses out of it
    is captured."""

    def __init__(self, response: Any, call: ModelCall, outgoing: Outgoing | None) -> None:
        super().__init__(response)
        self._self_call = call
        self._self_outgoing = outgoing

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        parsed = self.__wrapped__.parse(*args, **kwargs)
        if isinstance(parsed, SyncStreamProxy) or not hasattr(parsed, "__next__"):
            return parsed
        call = self._self_call
        return SyncStreamProxy(parsed, call, self._self_outgoing, MessageStreamAccumulator(call.request))


class _AsyncRawResponseProxy(wrapt.BaseObjectProxy[Any]):
    def __init__(self, response: Any, call: ModelCall, outgoing: Outgoing | None) -> None:
        super().__init__(response)
        self._self_call = call
        self._self_outgoing = outgoing

    async def parse(self, *args: Any, **kwargs: Any) -> Any:
        parsed = await self.__wrapped__.parse(*args, **kwargs)
        if isinstance(parsed, AsyncStreamProxy) or not hasattr(parsed, "__anext__"):
            return parsed
        call = self._self_call
        return AsyncStreamProxy(parsed, call, self._self_outgoing, MessageStreamAccumulator(call.request))
