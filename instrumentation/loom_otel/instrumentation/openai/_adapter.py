"""OpenAI Chat Completions and Responses as the call skeleton's vendor
(``loom_otel.core._calls._adapter.VendorAdapter``): the API is told by the resource the method belongs to."""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from loom_otel.core.vendor import (
    END_OF_STREAM,
    AsyncStreamProxy,
    Decode,
    ModelCall,
    RequestInfo,
    Runtime,
    SyncStreamProxy,
    finish,
    tap_raw_body,
    withhold_from_response,
)
from loom_otel.instrumentation.openai._continuation import OpenAiContinuation, Outgoing
from loom_otel.instrumentation.openai._extractors import CHAT, RESPONSES, Api
from loom_otel.instrumentation.openai._guard import check_openai_chat_request, check_openai_responses_request
from loom_otel.instrumentation.openai._readable import readable_reasoning, thinking_settings

__all__ = ["OpenAiAdapter"]

_CHAT_RESOURCES: Final = frozenset({"Completions", "AsyncCompletions"})
_RESPONSES_HINTS: Final = {"api": "responses"}


def _is_chat(instance: Any) -> bool:
    return type(instance).__name__ in _CHAT_RESOURCES


class OpenAiAdapter:
    """``create`` and ``parse`` of Chat Completions and of the Responses API. A raw response
    (``with_raw_response``, ``with_streaming_response``) of a whole response is parsed at once (the SDK
    caches the parse), and in redact mode its body loses the reasoning; a raw streaming response is
    captured from its body as the application reads it (``tap_raw_body``)."""

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

    def sync_result(self, call: ModelCall, outgoing: Outgoing | None, result: Any) -> Any:
        if _is_raw(result):
            if call.request.stream:
                _tap(call, outgoing, result, asynchronous=False)
            else:
                _finish_raw(call, outgoing, result, result.parse())
            return result
        return _result(call, outgoing, result, SyncStreamProxy)

    async def async_result(self, call: ModelCall, outgoing: Outgoing | None, result: Any) -> Any:
        if _is_raw(result):
            if call.request.stream:
                _tap(call, outgoing, result, asynchronous=True)
            else:  # the legacy response's parse is sync, the streamed response's a coroutine
                parsed = result.parse()
                _finish_raw(call, outgoing, result, await parsed if inspect.isawaitable(parsed) else parsed)
            return result
        return _result(call, outgoing, result, AsyncStreamProxy)


def _is_raw(result: Any) -> bool:
    from openai._legacy_response import LegacyAPIResponse
    from openai._response import BaseAPIResponse

    return isinstance(result, LegacyAPIResponse | BaseAPIResponse)


def _result(
    call: ModelCall,
    outgoing: Outgoing | None,
    result: Any,
    proxy: type[SyncStreamProxy] | type[AsyncStreamProxy],
) -> Any:
    api = _api_of(call)
    if call.request.stream:
        return proxy(result, call, outgoing, api.accumulator(call.request))
    finish(call, outgoing, result, api.reasonings_of(result, call.request), api.response_info(result, call.request))
    return result


def _finish_raw(call: ModelCall, outgoing: Outgoing | None, raw: Any, parsed: Any) -> None:
    """A raw whole response: the parsed response as a whole response; in redact mode the raw body the
    application can read loses the reasoning too."""
    api = _api_of(call)
    reasonings = api.reasonings_of(parsed, call.request)
    finish(call, outgoing, parsed, reasonings, api.response_info(parsed, call.request))
    if outgoing is not None and outgoing.blanks:
        withhold_from_response(raw.http_response, [r.text for r in reasonings if r.text])


def _tap(call: ModelCall, outgoing: Outgoing | None, raw: Any, *, asynchronous: bool) -> None:
    """A raw streaming response: capture reads its body, which the application reads in any way."""
    blanks = outgoing is not None and outgoing.blanks
    accumulator = _api_of(call).accumulator(call.request)
    decode = _decode(raw)
    tap_raw_body(raw.http_response, call, outgoing, accumulator, decode, rewrite=blanks, asynchronous=asynchronous)


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
