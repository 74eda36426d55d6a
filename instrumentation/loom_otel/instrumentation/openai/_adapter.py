"""OpenAI Chat Completions and Responses as the call skeleton's vendor
(``loom_otel.core._calls._adapter.VendorAdapter``): the API is told by the resource the method belongs to."""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from loom_otel.core import Reasoning
from loom_otel.core.vendor import (
    Decode,
    ModelCall,
    RequestInfo,
    ResponseInfo,
    ResultReaders,
    Runtime,
    StreamAccumulator,
)
from loom_otel.core.vendor_helpers import END_OF_STREAM
from loom_otel.instrumentation.openai._continuation import OpenAiContinuation, Outgoing
from loom_otel.instrumentation.openai._extractors import CHAT, RESPONSES, Api
from loom_otel.instrumentation.openai._guard import check_openai_chat_request, check_openai_responses_request
from loom_otel.instrumentation.openai._readable import readable_reasoning, thinking_settings

__all__ = ["OpenAiAdapter", "OpenAiReaders"]

_CHAT_RESOURCES: Final = frozenset({"Completions", "AsyncCompletions"})
_RESPONSES_HINTS: Final = {"api": "responses"}


def _is_chat(instance: Any) -> bool:
    return type(instance).__name__ in _CHAT_RESOURCES


class OpenAiReaders(ResultReaders):
    """A response of either API, its stream, and the SDK's raw responses (``APIResponse``,
    ``LegacyAPIResponse``): a raw whole response is parsed at once (the SDK caches the parse)."""

    def whole(self, call: ModelCall, outgoing: Outgoing | None, response: Any) -> tuple[list[Reasoning], ResponseInfo]:
        api = _api_of(call)
        return api.reasonings_of(response, call.request), api.response_info(response, call.request)

    def accumulator(self, call: ModelCall, result: Any) -> StreamAccumulator:
        return _api_of(call).accumulator(call.request)

    def raw(self, result: Any) -> bool:
        from openai._legacy_response import LegacyAPIResponse
        from openai._response import BaseAPIResponse

        return isinstance(result, LegacyAPIResponse | BaseAPIResponse)

    def decode(self, raw: Any) -> Decode:
        return _decode(raw)


class OpenAiAdapter:
    """``create`` and ``parse`` of Chat Completions and of the Responses API; what they return is read by
    ``OpenAiReaders`` under core's dispatch (raw responses whole and streamed included)."""

    readers: Final = OpenAiReaders()

    def __init__(self, runtime: Runtime) -> None:
        self.continuation = OpenAiContinuation(runtime) if runtime.enabled else None
        self.readable = runtime.enabled and runtime.request_readable == "summarized"

    def check_request(self, instance: Any, kwargs: Mapping[str, Any]) -> None:
        if _is_chat(instance):
            check_openai_chat_request(kwargs)
        else:
            check_openai_responses_request(kwargs)

    def prepare(self, instance: Any, kwargs: dict[str, Any]) -> Outgoing | None:
        continuation = self.continuation
        outgoing = None if continuation is None else continuation.prepare(_is_chat(instance), kwargs)
        reasoning = self._readable(instance, kwargs) if outgoing is not None else None
        if outgoing is not None and reasoning is not None:  # DESIGN "Readable by request"
            outgoing.kwargs = {**outgoing.kwargs, "reasoning": reasoning}
            outgoing.readable = True
        return outgoing

    def _readable(self, instance: Any, kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
        """The ``reasoning`` that asks for the summary the application did not ask for (Responses,
        with ``LOOM_OTEL_REQUEST_READABLE`` on)."""
        return readable_reasoning(kwargs) if self.readable and not _is_chat(instance) else None

    def streams(self, kwargs: Mapping[str, Any]) -> bool:
        return kwargs.get("stream") is True

    def request_info(self, instance: Any, kwargs: Mapping[str, Any], *, stream: bool) -> RequestInfo:
        chat = _is_chat(instance)
        readable = self.continuation is not None and self._readable(instance, kwargs) is not None
        thinking = thinking_settings(kwargs, chat=chat, readable=readable)
        if chat:
            return replace(CHAT.request_info(instance, kwargs, stream), thinking=thinking)
        info = RESPONSES.request_info(instance, kwargs, stream)
        return replace(info, hints={**info.hints, **_RESPONSES_HINTS}, thinking=thinking)


def _decode(raw: Any) -> Decode:
    """The chunks the SDK's stream yields, read as it reads them (``openai._streaming.Stream``): ``[DONE]``
    ends it, an error is the ``APIError`` it raises; Assistants ``thread.`` events yield none here."""
    chunk_type = typing.get_args(raw._stream_cls)[0]
    process = raw._client._process_response_data
    response = raw.http_response

    def decode(event: str | None, data: str) -> Any:
        if data.startswith("[DONE]"):
            return END_OF_STREAM
        if (event or "").startswith("thread."):
            return None
        value = json.loads(data)
        if isinstance(value, Mapping) and value.get("error"):
            from openai import APIError

            error = value["error"]
            message = error.get("message") if isinstance(error, Mapping) else None
            text = message if isinstance(message, str) and message else "An error occurred during streaming"
            return APIError(message=text, request=response.request, body=error)
        return process(data=value, cast_to=chunk_type, response=response)

    return decode


def _api_of(call: ModelCall) -> Api:
    return RESPONSES if call.request.hints.get("api") == "responses" else CHAT
