"""The Anthropic Messages API as the call skeleton's vendor (``loom_otel.core._calls._adapter.VendorAdapter``)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import wrapt

from loom_otel.core._adapter_kit import (
    AsyncStreamProxy,
    ModelCall,
    RequestInfo,
    Runtime,
    StreamAccumulator,
    SyncStreamProxy,
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

__all__ = ["AnthropicAdapter", "outgoing_of"]


@functools.cache
def _raw_response_type() -> type[Any]:
    from anthropic._response import BaseAPIResponse  # the SDK is imported by then; resolved once

    return BaseAPIResponse


def outgoing_of(call: ModelCall) -> Outgoing | None:
    """The call's request after the continuation pass (this vendor's ``Outgoing``)."""
    outgoing = call.outgoing
    return outgoing if isinstance(outgoing, Outgoing) else None


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

    def sync_result(self, call: ModelCall, result: Any) -> Any:
        if isinstance(result, _raw_response_type()):
            if call.request.stream:
                return _RawResponseProxy(result, call, self)
            self._complete_raw(call, result, result.parse())
            return result
        if call.request.stream:
            return SyncStreamProxy(result, call, self.accumulator(call))
        self.complete(call, result)
        return result

    async def async_result(self, call: ModelCall, result: Any) -> Any:
        if isinstance(result, _raw_response_type()):
            if call.request.stream:
                return _AsyncRawResponseProxy(result, call, self)
            self._complete_raw(call, result, await result.parse())
            return result
        if call.request.stream:
            return AsyncStreamProxy(result, call, self.accumulator(call))
        self.complete(call, result)
        return result

    def complete(self, call: ModelCall, message: Any) -> None:
        """Capture, record the bindings of what was produced, then (redact mode) blank readable thinking."""
        outgoing = outgoing_of(call)
        if outgoing is not None:
            outgoing.finish(call, message)
        call.complete(reasonings_of(message, call.request), response_info(message, call.request))
        if outgoing is not None:
            outgoing.scrub(message)

    def _complete_raw(self, call: ModelCall, raw: Any, message: Any) -> None:
        """``with_raw_response``: the parsed message as ``complete``; in redact mode the raw body loses
        the reasoning text too."""
        texts = [r.text for r in reasonings_of(message, call.request) if r.text]
        self.complete(call, message)
        outgoing = outgoing_of(call)
        if outgoing is not None and outgoing.blanks:
            withhold_from_response(raw.http_response, texts)

    def accumulator(self, call: ModelCall) -> StreamAccumulator:
        """What a raw event stream's proxy feeds: capture's accumulator, under the continuation layer."""
        inner = MessageStreamAccumulator(call.request)
        outgoing = outgoing_of(call)
        return inner if outgoing is None else outgoing.accumulator(call, inner)


def _continues_thread(kwargs: Mapping[str, Any]) -> bool:
    thread = kwargs.get("thread")
    return isinstance(thread, Mapping) and thread.get("type") == "continue"


class _RawResponseProxy(wrapt.BaseObjectProxy[Any]):
    """A raw streaming response (``with_raw_response``): the stream the application parses out of it
    is captured."""

    def __init__(self, response: Any, call: ModelCall, adapter: AnthropicAdapter) -> None:
        super().__init__(response)
        self._self_call = call
        self._self_adapter = adapter

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        parsed = self.__wrapped__.parse(*args, **kwargs)
        if isinstance(parsed, SyncStreamProxy) or not hasattr(parsed, "__next__"):
            return parsed
        return SyncStreamProxy(parsed, self._self_call, self._self_adapter.accumulator(self._self_call))


class _AsyncRawResponseProxy(wrapt.BaseObjectProxy[Any]):
    def __init__(self, response: Any, call: ModelCall, adapter: AnthropicAdapter) -> None:
        super().__init__(response)
        self._self_call = call
        self._self_adapter = adapter

    async def parse(self, *args: Any, **kwargs: Any) -> Any:
        parsed = await self.__wrapped__.parse(*args, **kwargs)
        if isinstance(parsed, AsyncStreamProxy) or not hasattr(parsed, "__anext__"):
            return parsed
        return AsyncStreamProxy(parsed, self._self_call, self._self_adapter.accumulator(self._self_call))
