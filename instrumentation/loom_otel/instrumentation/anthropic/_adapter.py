"""The Anthropic Messages API as the call skeleton's vendor (``loom_otel.core._calls._adapter.VendorAdapter``)."""

from __future__ import annotations

import functools
import importlib
import json
import typing
from collections.abc import Mapping
from typing import Any, Final

from loom_otel.core import Reasoning
from loom_otel.core.vendor import Decode, ModelCall, RequestInfo, ResponseInfo, ResultReaders, Runtime
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

__all__ = ["AnthropicAdapter", "AnthropicReaders"]


@functools.cache
def _raw_response_types() -> tuple[type[Any], ...]:
    """``with_raw_response`` / ``with_streaming_response`` results (the SDK is imported by then; resolved
    once): ``APIResponse``, and before anthropic 1.0 the ``with_raw_response`` ``LegacyAPIResponse``."""
    from anthropic._response import BaseAPIResponse

    try:
        legacy: type[Any] = importlib.import_module("anthropic._legacy_response").LegacyAPIResponse
    except ImportError:
        return (BaseAPIResponse,)
    return (BaseAPIResponse, legacy)


class AnthropicReaders(ResultReaders):
    """A message, a stream of events, and the SDK's raw responses (``APIResponse``; before anthropic 1.0
    also the ``with_raw_response`` ``LegacyAPIResponse``)."""

    def whole(self, call: ModelCall, outgoing: Outgoing | None, response: Any) -> tuple[list[Reasoning], ResponseInfo]:
        return reasonings_of(response, call.request), response_info(response, call.request)

    def accumulator(self, call: ModelCall, result: Any) -> MessageStreamAccumulator:
        return MessageStreamAccumulator(call.request)

    def raw(self, result: Any) -> bool:
        return isinstance(result, _raw_response_types())

    def decode(self, raw: Any) -> Decode:
        return _decode(raw)


class AnthropicAdapter:
    """Messages ``create`` / ``parse`` / ``stream`` of the first-party, beta, Vertex and Bedrock clients."""

    readers: Final = AnthropicReaders()

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


def _continues_thread(kwargs: Mapping[str, Any]) -> bool:
    thread = kwargs.get("thread")
    return isinstance(thread, Mapping) and thread.get("type") == "continue"


def _decode(raw: Any) -> Decode:
    """The events the SDK's stream yields, read as it reads them (``anthropic._streaming.Stream``): an
    ``error`` event is the error it raises; a ping and an event without a name or data yield nothing."""
    chunk_type = typing.get_args(raw._stream_cls)[0]
    client = raw._client
    response = raw.http_response

    def decode(event: str | None, data: str) -> Any:
        if event == "error":
            try:
                body: object = json.loads(data)
            except ValueError:
                body = data
            return client._make_status_error(f"{body}" if data else "Error", body=body, response=response)
        if event in (None, "ping") or not data:
            return None
        return client._process_response_data(data=json.loads(data), cast_to=chunk_type, response=response)

    return decode
