"""OpenAI Chat Completions and Responses as the call skeleton's vendor
(``loom_otel.core._calls._adapter.VendorAdapter``): the API is told by the resource the method belongs to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from loom_otel.core._adapter_kit import (
    AsyncStreamProxy,
    ModelCall,
    RequestInfo,
    Runtime,
    SyncStreamProxy,
    finish,
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
    """``create`` and ``parse`` of Chat Completions and of the Responses API. ``with_raw_response``
    results are parsed (the body is already read; the SDK caches the parse); a raw streaming response is
    not read: its span ends with ``loom.stream.outcome = "raw_response"`` and nothing captured."""

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
        return _result(call, outgoing, result, SyncStreamProxy)

    async def async_result(self, call: ModelCall, outgoing: Outgoing | None, result: Any) -> Any:
        return _result(call, outgoing, result, AsyncStreamProxy)


def _result(
    call: ModelCall,
    outgoing: Outgoing | None,
    result: Any,
    proxy: type[SyncStreamProxy] | type[AsyncStreamProxy],
) -> Any:
    from openai._legacy_response import LegacyAPIResponse
    from openai._response import BaseAPIResponse

    api = _api_of(call)
    if isinstance(result, LegacyAPIResponse) and not call.request.stream:
        parsed = result.parse()
        reasonings = api.reasonings_of(parsed, call.request)
        finish(call, outgoing, parsed, reasonings, api.response_info(parsed, call.request))
        if outgoing is not None and outgoing.blanks:  # the raw body the app can read
            withhold_from_response(result.http_response, [r.text for r in reasonings if r.text])
        return result
    if isinstance(result, LegacyAPIResponse | BaseAPIResponse):
        call.abandon("raw_response")
        return result
    if call.request.stream:
        return proxy(result, call, outgoing, api.accumulator(call.request))
    finish(call, outgoing, result, api.reasonings_of(result, call.request), api.response_info(result, call.request))
    return result


def _api_of(call: ModelCall) -> Api:
    return RESPONSES if call.request.hints.get("api") == "responses" else CHAT
