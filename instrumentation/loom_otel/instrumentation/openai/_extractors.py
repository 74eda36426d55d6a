"""OpenAI-compatible APIs <-> loom-otel: pure functions over request kwargs, responses and stream events.

Chat Completions (DeepSeek, vLLM): the undeclared ``reasoning_content`` field, or ``reasoning`` (vLLM's
newer name), of each choice's message or streamed delta is one ``text`` part per choice.

Responses API: each ``reasoning`` output item is one part: ``text`` when it carries ``reasoning_text``
content, else ``summary`` (its summary texts joined by a blank line, ``""`` when none was asked for);
``encrypted_content`` rides as the part's signature. Streams are rebuilt from the final response event,
or from the items and deltas received when the stream stops before it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from loom_otel.core import Reasoning, ReasoningKind
from loom_otel.core.vendor import RequestInfo, ResponseInfo
from loom_otel.core.vendor_helpers import (
    AttributeValue,
    LayoutBuilder,
    attach_request,
    attr,
    content_mode,
    content_part,
    field,
    finish_reasons,
    model_name,
    reasoning_input_part,
    request_parameters,
    server_attributes,
    text_part,
    tool_call_part,
    tool_response_part,
)

__all__ = ["CHAT", "RESPONSES", "Api", "provider_of"]

_OPERATION: Final = "chat"
_FIELDS: Final = ("reasoning_content", "reasoning")
_SUMMARY_SEPARATOR: Final = "\n\n"
_FINAL_EVENTS: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})
_CHAT_PARAMETERS: Final = {
    attr.GEN_AI_REQUEST_MAX_TOKENS: "max_completion_tokens",
    attr.GEN_AI_REQUEST_TEMPERATURE: "temperature",
    attr.GEN_AI_REQUEST_TOP_P: "top_p",
    attr.GEN_AI_REQUEST_STOP_SEQUENCES: "stop",
    attr.GEN_AI_REQUEST_SEED: "seed",
    attr.GEN_AI_REQUEST_FREQUENCY_PENALTY: "frequency_penalty",
    attr.GEN_AI_REQUEST_PRESENCE_PENALTY: "presence_penalty",
    attr.GEN_AI_REQUEST_CHOICE_COUNT: "n",
}
_RESPONSES_PARAMETERS: Final = {
    attr.GEN_AI_REQUEST_MAX_TOKENS: "max_output_tokens",
    attr.GEN_AI_REQUEST_TEMPERATURE: "temperature",
    attr.GEN_AI_REQUEST_TOP_P: "top_p",
}
_ALIASES: Final = {"max_completion_tokens": "max_tokens"}
"""A parameter's older name, read when the newer one is absent."""
CHAT_FINISH_REASONS: Final = {"tool_calls": "tool_call", "function_call": "tool_call"}
"""Chat Completions ``finish_reason`` -> the conventions' (``stop``, ``length``, ``content_filter`` are equal)."""
RESPONSES_INCOMPLETE: Final = {"max_output_tokens": "length", "content_filter": "content_filter"}
"""Responses ``incomplete_details.reason`` -> the conventions' finish reason."""
_JSON_FORMATS: Final = frozenset({"json_object", "json_schema"})


class Accumulator(Protocol):
    text_deltas: list[tuple[int, str]] | None

    def feed(self, chunk: Any) -> Sequence[tuple[int, str]]: ...

    def result(self) -> tuple[list[Reasoning], ResponseInfo]: ...


@dataclass(frozen=True, slots=True)
class Api:
    """One OpenAI API as the wrappers see it."""

    request_info: Callable[[Any, Mapping[str, Any], bool], RequestInfo]
    reasonings_of: Callable[[Any, RequestInfo], list[Reasoning]]
    response_info: Callable[[Any, RequestInfo], ResponseInfo]
    accumulator: Callable[[RequestInfo], Accumulator]


def provider_of(instance: Any) -> str:
    """``deepseek`` when the base URL's host names it, else ``openai`` (GenAI conventions)."""
    host = getattr(getattr(getattr(instance, "_client", None), "base_url", None), "host", None)
    return "deepseek" if host and "deepseek" in str(host).lower() else "openai"


def _output_type(fmt: object) -> str | None:
    """``json`` / ``text`` from a ``response_format`` (Chat) or ``text.format`` (Responses)."""
    kind = fmt.get("type") if isinstance(fmt, Mapping) else getattr(fmt, "type", None)
    if kind in _JSON_FORMATS:
        return "json"
    return "text" if kind == "text" else None


Content = Callable[[Mapping[str, Any]], tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]]
"""(system instructions, input messages) of one API's request kwargs."""


def _request_info(
    instance: Any,
    kwargs: Mapping[str, Any],
    stream: bool,
    parameters: Mapping[str, str],
    *,
    fmt: object,
    content: Content,
) -> RequestInfo:
    attributes: dict[str, AttributeValue] = {}

    def value_of(name: str) -> object:
        value = kwargs.get(name)
        return kwargs.get(_ALIASES[name]) if value is None and name in _ALIASES else value

    request_parameters(value_of, parameters, attributes)
    output_type = _output_type(fmt)
    if output_type is not None:
        attributes[attr.GEN_AI_OUTPUT_TYPE] = output_type
    server_attributes(getattr(getattr(instance, "_client", None), "base_url", None), attributes)
    model = kwargs.get("model")
    hints: dict[str, object] = {}
    mode = content_mode()
    if mode != "NO_CONTENT":
        system, messages = content(kwargs)
        attach_request(mode, system=system, messages=messages, tools=_tools(kwargs), attributes=attributes, hints=hints)
    return RequestInfo(
        provider=provider_of(instance),
        operation=_OPERATION,
        model=model_name(model),
        stream=stream,
        attributes=attributes,
        hints=hints,
    )


# --- message content (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT) -------------------------


def _tools(kwargs: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    found: list[dict[str, Any]] = []
    for tool in kwargs.get("tools") or ():
        function = field(tool, "function") or tool  # Chat nests the function; Responses does not
        kind = field(tool, "type")
        if kind == "function":
            found.append(
                {
                    "type": "function",
                    "name": field(function, "name"),
                    "description": field(function, "description"),
                    "parameters": field(function, "parameters"),
                }
            )
        else:
            found.append({"type": str(kind or "unknown")})
    return found or None


def _texts(content: Any) -> list[dict[str, Any]]:
    """A message content: a string, or parts of which the text ones are kept, the reasoning ones by
    reference (others by their kind)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [text_part(content)]
    return [content_part(part) for part in content]


def _chat_message(message: Any, *, answer: bool = False) -> dict[str, Any]:
    role = str(field(message, "role") or "user")
    parts: list[dict[str, Any]] = []
    if isinstance(message, Mapping):
        reasoning = next((message[n] for n in _FIELDS if isinstance(message.get(n), str)), None)
    else:
        reasoning = _reasoning_field(message)
    if reasoning and not answer:
        parts.append(reasoning_input_part(reasoning, None))
    if role == "tool":
        parts.append(tool_response_part(field(message, "tool_call_id"), field(message, "content")))
    else:
        parts += _texts(field(message, "content"))
    for call in field(message, "tool_calls") or ():
        function = field(call, "function")
        parts.append(tool_call_part(field(call, "id"), field(function, "name"), field(function, "arguments")))
    return {"role": role, "parts": parts}


def _chat_content(kwargs: Mapping[str, Any]) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    return None, [_chat_message(m) for m in kwargs.get("messages") or ()]


def _responses_items(items: Any, *, answer: bool = False) -> list[dict[str, Any]]:
    """Responses input or output items as messages (consecutive non-message items join one message)."""
    if isinstance(items, str):
        return [{"role": "user", "parts": [text_part(items)]}]
    messages: list[dict[str, Any]] = []
    for item in items or ():
        kind = field(item, "type")
        role = field(item, "role")
        if role is not None and kind in (None, "message"):
            messages.append({"role": str(role), "parts": _texts(field(item, "content"))})
            continue
        if kind == "function_call":
            part = tool_call_part(field(item, "call_id"), field(item, "name"), field(item, "arguments"))
            owner = "assistant"
        elif kind == "function_call_output":
            part, owner = tool_response_part(field(item, "call_id"), field(item, "output")), "tool"
        elif kind == "reasoning":
            if answer:
                continue
            summary = [field(s, "text") for s in field(item, "summary") or ()]
            text = _SUMMARY_SEPARATOR.join(t for t in summary if isinstance(t, str))
            part, owner = reasoning_input_part(text, field(item, "encrypted_content")), "assistant"
        else:
            part, owner = {"type": str(kind or "unknown")}, "assistant"
        if messages and messages[-1]["role"] == owner:
            messages[-1]["parts"].append(part)
        else:
            messages.append({"role": owner, "parts": [part]})
    return messages


def _responses_content(kwargs: Mapping[str, Any]) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    instructions = kwargs.get("instructions")
    system = [text_part(instructions)] if isinstance(instructions, str) and instructions else None
    return system, _responses_items(kwargs.get("input"))


def _set_int(into: dict[str, AttributeValue], key: str, value: object) -> None:
    if isinstance(value, int) and not isinstance(value, bool):
        into[key] = value


def _head(obj: Any, into: dict[str, AttributeValue]) -> str | None:
    if getattr(obj, "id", None):
        into[attr.GEN_AI_RESPONSE_ID] = str(obj.id)
    model = getattr(obj, "model", None)
    return str(model) if model else None


# --- Chat Completions -------------------------------------------------------------------------------


def _reasoning_field(obj: Any) -> str | None:
    """``reasoning_content`` or ``reasoning`` from a message or a delta (undeclared: ``model_extra``)."""
    extra = getattr(obj, "model_extra", None)
    if not extra:
        return None
    for name in _FIELDS:
        value = extra.get(name)
        if isinstance(value, str):
            return value
    return None


def chat_request_info(instance: Any, kwargs: Mapping[str, Any], stream: bool) -> RequestInfo:
    return _request_info(
        instance, kwargs, stream, _CHAT_PARAMETERS, fmt=kwargs.get("response_format"), content=_chat_content
    )


def chat_reasonings(completion: Any, request: RequestInfo) -> list[Reasoning]:
    """One ``text`` part per choice whose message carries non-empty reasoning, by choice index."""
    found: list[tuple[int, str]] = []
    for choice in getattr(completion, "choices", None) or ():
        text = _reasoning_field(getattr(choice, "message", None))
        if text:
            found.append((choice.index, text))
    return [Reasoning(ReasoningKind.TEXT, request.provider, text=text) for _, text in sorted(found)]


def _chat_usage(usage: Any, into: dict[str, AttributeValue]) -> None:
    if usage is None:
        return
    _set_int(into, attr.GEN_AI_USAGE_INPUT_TOKENS, getattr(usage, "prompt_tokens", None))
    _set_int(into, attr.GEN_AI_USAGE_OUTPUT_TOKENS, getattr(usage, "completion_tokens", None))
    details = getattr(usage, "completion_tokens_details", None)
    _set_int(into, attr.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, getattr(details, "reasoning_tokens", None))
    cached = getattr(usage, "prompt_tokens_details", None)
    _set_int(into, attr.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, getattr(cached, "cached_tokens", None))


def chat_response_info(completion: Any, request: RequestInfo) -> ResponseInfo:
    attributes: dict[str, AttributeValue] = {}
    model = _head(completion, attributes)
    reasons = [str(c.finish_reason) for c in getattr(completion, "choices", None) or () if c.finish_reason]
    if reasons:
        attributes[attr.GEN_AI_RESPONSE_FINISH_REASONS] = finish_reasons(reasons, CHAT_FINISH_REASONS)
    _chat_usage(getattr(completion, "usage", None), attributes)
    content = _chat_output(completion)  # recorded with content capture on; the scrubber reads it
    return ResponseInfo(model=model, attributes=attributes, output_messages=content, layout=_chat_layout(completion))


def _chat_layout(completion: Any) -> tuple[str, ...]:
    """Per choice, by index: its reasoning, its answer text, its tool calls (``core._evidence._layout``)."""
    layout = LayoutBuilder()
    for choice in sorted(getattr(completion, "choices", None) or (), key=lambda c: c.index):
        message = getattr(choice, "message", None)
        if _reasoning_field(message):
            layout.reasoning()
        if getattr(message, "content", None):
            layout.text()
        for call in getattr(message, "tool_calls", None) or ():
            function = getattr(call, "function", None)
            layout.tool_call(call.id, getattr(function, "name", None), getattr(function, "arguments", None))
    return layout.entries()


def _chat_output(completion: Any) -> list[dict[str, Any]]:
    messages = []
    for choice in getattr(completion, "choices", None) or ():
        message = _chat_message(choice.message, answer=True)
        if choice.finish_reason:
            (message["finish_reason"],) = finish_reasons([str(choice.finish_reason)], CHAT_FINISH_REASONS)
        messages.append(message)
    return messages


class ChatStreamAccumulator:
    """Rebuilds each choice's reasoning from ``ChatCompletionChunk`` deltas."""

    def __init__(self, request: RequestInfo) -> None:
        self._request = request
        self._texts: dict[int, list[str]] = {}
        self._finish: dict[int, str] = {}
        self._last: Any = None
        self._usage: Any = None
        self._answered: set[int] = set()
        self._calls: dict[int, dict[int, list[Any]]] = {}
        """Per choice, per tool call index: [id, name, argument pieces]."""
        self.text_deltas: list[tuple[int, str]] | None = None
        """Set by a stream whose live view carries text: ``feed`` then appends each ``delta.content``."""

    def feed(self, chunk: Any) -> Sequence[tuple[int, str]]:
        self._last = chunk
        if getattr(chunk, "usage", None) is not None:
            self._usage = chunk.usage
        deltas: list[tuple[int, str]] = []
        for choice in getattr(chunk, "choices", None) or ():
            text = _reasoning_field(choice.delta)
            if text:
                self._texts.setdefault(choice.index, []).append(text)
                deltas.append((choice.index, text))
            if choice.delta.content:
                self._answered.add(choice.index)
                if self.text_deltas is not None:
                    self.text_deltas.append((choice.index, choice.delta.content))
            if choice.delta.tool_calls:
                self._tool_deltas(choice.index, choice.delta.tool_calls)
            if choice.finish_reason:
                self._finish[choice.index] = str(choice.finish_reason)
        return deltas

    def result(self) -> tuple[list[Reasoning], ResponseInfo]:
        provider = self._request.provider
        reasonings = [
            Reasoning(ReasoningKind.TEXT, provider, text="".join(texts)) for _, texts in sorted(self._texts.items())
        ]
        attributes: dict[str, AttributeValue] = {}
        model = _head(self._last, attributes) if self._last is not None else None
        if self._finish:
            reasons = [r for _, r in sorted(self._finish.items())]
            attributes[attr.GEN_AI_RESPONSE_FINISH_REASONS] = finish_reasons(reasons, CHAT_FINISH_REASONS)
        _chat_usage(self._usage, attributes)
        return reasonings, ResponseInfo(model=model, attributes=attributes, layout=self._layout())

    def _tool_deltas(self, choice: int, deltas: Any) -> None:
        calls = self._calls.setdefault(choice, {})
        for delta in deltas:
            call = calls.setdefault(delta.index, [None, None, []])
            if delta.id:
                call[0] = delta.id
            function = delta.function
            if function is not None:
                if function.name:
                    call[1] = function.name
                if function.arguments:
                    call[2].append(function.arguments)

    def _layout(self) -> tuple[str, ...]:
        """As ``_chat_layout`` reads a complete response."""
        layout = LayoutBuilder()
        for choice in sorted(self._texts.keys() | self._answered | self._calls.keys()):
            if choice in self._texts:
                layout.reasoning()
            if choice in self._answered:
                layout.text()
            for _, (call_id, name, pieces) in sorted(self._calls.get(choice, {}).items()):
                layout.tool_call(call_id, name, "".join(pieces))
        return layout.entries()


# --- Responses API ----------------------------------------------------------------------------------


def responses_request_info(instance: Any, kwargs: Mapping[str, Any], stream: bool) -> RequestInfo:
    text = kwargs.get("text")
    fmt = text.get("format") if isinstance(text, Mapping) else None
    return _request_info(instance, kwargs, stream, _RESPONSES_PARAMETERS, fmt=fmt, content=_responses_content)


def _item_reasoning(item: Any, provider: str) -> Reasoning:
    content = [c.text for c in getattr(item, "content", None) or () if getattr(c, "text", None) is not None]
    if content:
        kind, text = ReasoningKind.TEXT, _SUMMARY_SEPARATOR.join(content)
    else:
        summaries = [s.text for s in getattr(item, "summary", None) or ()]
        kind, text = ReasoningKind.SUMMARY, _SUMMARY_SEPARATOR.join(summaries)
    return Reasoning(kind, provider, text=text, signature=getattr(item, "encrypted_content", None) or None)


def responses_reasonings(response: Any, request: RequestInfo) -> list[Reasoning]:
    """One part per ``reasoning`` output item, in output order."""
    return [
        _item_reasoning(item, request.provider)
        for item in getattr(response, "output", None) or ()
        if getattr(item, "type", None) == "reasoning"
    ]


def _responses_finish_reason(response: Any) -> str | None:
    """``completed`` is ``stop`` (``tool_call`` when the output calls a function), ``incomplete`` its
    reason (``length``, ``content_filter``), ``failed`` / ``cancelled`` ``error``; in progress: none."""
    status = getattr(response, "status", None)
    if status == "completed":
        calls = any(getattr(i, "type", None) == "function_call" for i in getattr(response, "output", None) or ())
        return "tool_call" if calls else "stop"
    if status == "incomplete":
        reason = getattr(getattr(response, "incomplete_details", None), "reason", None)
        return RESPONSES_INCOMPLETE.get(str(reason), str(reason or "incomplete"))
    if status in ("failed", "cancelled"):
        return "error"
    return None


def responses_response_info(response: Any, request: RequestInfo) -> ResponseInfo:
    attributes: dict[str, AttributeValue] = {}
    model = _head(response, attributes)
    reason = _responses_finish_reason(response)
    if reason is not None:
        attributes[attr.GEN_AI_RESPONSE_FINISH_REASONS] = (reason,)
    usage = getattr(response, "usage", None)
    if usage is not None:
        _set_int(attributes, attr.GEN_AI_USAGE_INPUT_TOKENS, getattr(usage, "input_tokens", None))
        _set_int(attributes, attr.GEN_AI_USAGE_OUTPUT_TOKENS, getattr(usage, "output_tokens", None))
        details = getattr(usage, "output_tokens_details", None)
        _set_int(attributes, attr.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, getattr(details, "reasoning_tokens", None))
        cached = getattr(usage, "input_tokens_details", None)
        _set_int(attributes, attr.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, getattr(cached, "cached_tokens", None))
    content = _responses_items(getattr(response, "output", None), answer=True) or [{"role": "assistant", "parts": []}]
    if reason is not None:  # recorded with content capture on; the scrubber reads it always
        content[-1]["finish_reason"] = reason
    layout = _responses_layout(getattr(response, "output", None))
    return ResponseInfo(model=model, attributes=attributes, output_messages=content, layout=layout)


def _responses_layout(items: Any) -> tuple[str, ...]:
    """Output items in order: reasoning items, messages (answer text), function calls (``core._evidence._layout``)."""
    layout = LayoutBuilder()
    for item in items or ():
        kind = getattr(item, "type", None)
        if kind == "reasoning":
            layout.reasoning()
        elif kind == "message":
            layout.text()
        elif kind == "function_call":
            layout.tool_call(getattr(item, "call_id", None), getattr(item, "name", None), item.arguments)
    return layout.entries()


class ResponsesStreamAccumulator:
    """Rebuilds reasoning items from Responses stream events: the final response when it arrives, else
    the finished items (``response.output_item.done``) and the summary deltas of unfinished ones."""

    def __init__(self, request: RequestInfo) -> None:
        self._request = request
        self._final: Any = None
        self._started: Any = None
        self._done: dict[int, Any] = {}
        self._partial: dict[int, dict[int, list[str]]] = {}
        self._partial_kind: dict[int, ReasoningKind] = {}
        self.text_deltas: list[tuple[int, str]] | None = None
        """Set by a stream whose live view carries text: ``feed`` then appends ``output_text`` deltas."""

    def feed(self, event: Any) -> Sequence[tuple[int, str]]:
        kind = getattr(event, "type", None)
        if kind == "response.output_text.delta":
            if self.text_deltas is not None:
                self.text_deltas.append((event.output_index, event.delta))
            return ()
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            readable = kind == "response.reasoning_text.delta"
            index = event.content_index if readable else event.summary_index
            self._partial_kind[event.output_index] = ReasoningKind.TEXT if readable else ReasoningKind.SUMMARY
            parts = self._partial.setdefault(event.output_index, {})
            deltas = [(event.output_index, _SUMMARY_SEPARATOR)] if index not in parts and parts else []
            parts.setdefault(index, []).append(event.delta)
            deltas.append((event.output_index, event.delta))
            return deltas
        if kind == "response.output_item.done" and getattr(event.item, "type", None) == "reasoning":
            self._done[event.output_index] = event.item
        elif kind in _FINAL_EVENTS:
            self._final = event.response
        elif kind == "response.created":
            self._started = event.response
        return ()

    def result(self) -> tuple[list[Reasoning], ResponseInfo]:
        provider = self._request.provider
        if self._final is not None:
            return responses_reasonings(self._final, self._request), responses_response_info(self._final, self._request)
        reasonings: list[Reasoning] = []
        for index in sorted(self._done.keys() | self._partial.keys()):
            item = self._done.get(index)
            if item is not None:
                reasonings.append(_item_reasoning(item, provider))
            else:
                texts = ["".join(t) for _, t in sorted(self._partial[index].items())]
                kind = self._partial_kind[index]
                reasonings.append(Reasoning(kind, provider, text=_SUMMARY_SEPARATOR.join(texts)))
        info = responses_response_info(self._started, self._request) if self._started is not None else ResponseInfo()
        layout = LayoutBuilder()  # stopped before its end: the reasoning items received, nothing else known
        for _ in reasonings:
            layout.reasoning()
        return reasonings, dataclasses.replace(info, layout=layout.entries())


CHAT: Final = Api(chat_request_info, chat_reasonings, chat_response_info, ChatStreamAccumulator)
RESPONSES: Final = Api(
    responses_request_info, responses_reasonings, responses_response_info, ResponsesStreamAccumulator
)
