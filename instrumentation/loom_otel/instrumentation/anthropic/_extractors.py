"""Anthropic Messages <-> loom-otel: pure functions over request kwargs, messages and stream events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from loom_otel.core import Reasoning, ReasoningKind
from loom_otel.core.vendor import RequestInfo, ResponseInfo
from loom_otel.core.vendor_helpers import (
    AttributeValue,
    LayoutBuilder,
    attach_request,
    attr,
    content_mode,
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
from loom_otel.instrumentation.anthropic._readable import summarises, thinking_settings

__all__ = ["MessageStreamAccumulator", "provider_of", "reasonings_of", "request_info", "response_info"]

_REASONING_BLOCKS: Final = frozenset({"thinking", "redacted_thinking"})
_PROVIDERS = {"AnthropicVertex": "gcp.vertex_ai", "AsyncAnthropicVertex": "gcp.vertex_ai"}
_BEDROCK = "aws.bedrock"
_PARAMETERS: Final = {
    attr.GEN_AI_REQUEST_MAX_TOKENS: "max_tokens",
    attr.GEN_AI_REQUEST_TEMPERATURE: "temperature",
    attr.GEN_AI_REQUEST_TOP_P: "top_p",
    attr.GEN_AI_REQUEST_TOP_K: "top_k",
    attr.GEN_AI_REQUEST_STOP_SEQUENCES: "stop_sequences",
}
FINISH_REASONS: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_call",
    "refusal": "content_filter",
}
"""Anthropic ``stop_reason`` -> the conventions' finish reason (others, e.g. ``pause_turn``, pass as they are)."""


def provider_of(instance: Any) -> str:
    """``anthropic``; ``gcp.vertex_ai`` / ``aws.bedrock`` for those clients (GenAI conventions)."""
    name = type(getattr(instance, "_client", None)).__name__
    if "Bedrock" in name:
        return _BEDROCK
    return _PROVIDERS.get(name, "anthropic")


def _thinking_kind(request: RequestInfo, response_model: object) -> ReasoningKind:
    """Readable thinking is a ``summary`` whenever the vendor summarises: the response's model does
    (Claude 4 and later), or the request asked ``display: "summarized"``; else the raw chain (``text``)."""
    if summarises(response_model if response_model else request.model) or request.hints.get("summarized"):
        return ReasoningKind.SUMMARY
    return ReasoningKind.TEXT


def _asked_summarized(kwargs: Mapping[str, Any]) -> bool:
    thinking = kwargs.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("display") == "summarized"


def _output_type(kwargs: Mapping[str, Any]) -> str | None:
    """``json`` when the request asks for structured output (``output_format`` or ``output_config.format``)."""
    config = kwargs.get("output_config")
    fmt = kwargs.get("output_format") or (config.get("format") if isinstance(config, Mapping) else None)
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, Mapping) else getattr(fmt, "type", None)
    return "json" if kind in (None, "json_schema") else None


def request_info(instance: Any, kwargs: Mapping[str, Any], *, stream: bool, readable: bool = False) -> RequestInfo:
    """What the span says at start; ``readable``: loom-otel asks the vendor for a readable summary the
    application did not ask for (``LOOM_OTEL_REQUEST_READABLE``)."""
    attributes: dict[str, AttributeValue] = {}
    extra = kwargs.get("extra_body")
    extra_body = extra if isinstance(extra, Mapping) else {}

    def value_of(name: str) -> object:
        """A keyword argument, or the same field sent in ``extra_body`` (SDK 2.x dropped the sampling
        keywords; older SDKs, which frameworks pin, still take them)."""
        value = kwargs.get(name)
        return extra_body.get(name) if value is None else value

    request_parameters(value_of, _PARAMETERS, attributes)
    output_type = _output_type(kwargs)
    if output_type is not None:
        attributes[attr.GEN_AI_OUTPUT_TYPE] = output_type
    server_attributes(getattr(getattr(instance, "_client", None), "base_url", None), attributes)
    model = kwargs.get("model")
    hints: dict[str, object] = {"summarized": readable or _asked_summarized(kwargs)}
    mode = content_mode()
    if mode != "NO_CONTENT":
        attach_request(
            mode,
            system=_system(kwargs.get("system")),
            messages=_messages(kwargs),
            tools=_tools(kwargs),
            attributes=attributes,
            hints=hints,
        )
    return RequestInfo(
        provider=provider_of(instance),
        operation="chat",
        model=model_name(model),
        stream=stream,
        attributes=attributes,
        hints=hints,
        thinking=thinking_settings(kwargs, readable=readable),
    )


# --- message content (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT) -------------------------


def _plain(content: Any) -> Any:
    """A tool result's content: its text, or its blocks' texts."""
    if isinstance(content, str) or content is None:
        return content
    texts = [field(b, "text") for b in content if field(b, "type") == "text"]
    return "".join(t for t in texts if isinstance(t, str))


def _part(block: Any) -> dict[str, Any]:
    kind = field(block, "type")
    if kind == "text":
        return text_part(str(field(block, "text") or ""))
    if kind == "thinking":
        return reasoning_input_part(field(block, "thinking"), field(block, "signature"))
    if kind == "redacted_thinking":
        return reasoning_input_part(None, field(block, "data"))
    if kind in ("tool_use", "server_tool_use"):
        return tool_call_part(field(block, "id"), field(block, "name"), field(block, "input"))
    if kind == "tool_result":
        return tool_response_part(field(block, "tool_use_id"), _plain(field(block, "content")))
    return {"type": str(kind or "unknown")}  # images, documents, search results: their kind only


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [text_part(content)]
    return [_part(b) for b in content or ()]


def _system(system: Any) -> list[dict[str, Any]] | None:
    return _parts(system) if system else None


def _messages(kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": str(field(m, "role") or "user"), "parts": _parts(field(m, "content"))}
        for m in kwargs.get("messages") or ()
    ]


def _tools(kwargs: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    found = []
    for tool in kwargs.get("tools") or ():
        kind = field(tool, "type")
        if kind in (None, "custom"):
            found.append(
                {
                    "type": "function",
                    "name": field(tool, "name"),
                    "description": field(tool, "description"),
                    "parameters": field(tool, "input_schema"),
                }
            )
        else:
            found.append({"type": str(kind), "name": field(tool, "name")})
    return found or None


def _answer(parts: list[dict[str, Any]], reasons: Sequence[str]) -> list[dict[str, Any]]:
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if reasons:
        message["finish_reason"] = reasons[0]
    return [message]


def _output_messages(message: Any, reasons: Sequence[str]) -> list[dict[str, Any]]:
    """The answer's blocks without its reasoning (``ModelCall`` adds that by reference)."""
    blocks = getattr(message, "content", None) or ()
    return _answer([_part(b) for b in blocks if getattr(b, "type", None) not in _REASONING_BLOCKS], reasons)


def _is_tool_call(block_type: object) -> bool:
    """``tool_use``, ``server_tool_use``, ``mcp_tool_use``: the blocks that call a tool."""
    return isinstance(block_type, str) and block_type.endswith("tool_use")


def _layout(blocks: Any) -> tuple[str, ...]:
    """The message's thinking, text and tool-use blocks in order (``core._evidence._layout``)."""
    layout = LayoutBuilder()
    for block in blocks or ():
        block_type = getattr(block, "type", None)
        if block_type in _REASONING_BLOCKS:
            layout.reasoning()
        elif block_type == "text":
            layout.text()
        elif _is_tool_call(block_type):
            layout.tool_call(getattr(block, "id", None), getattr(block, "name", None), getattr(block, "input", None))
    return layout.entries()


def _block_reasoning(block: Any, provider: str, kind: ReasoningKind) -> Reasoning | None:
    block_type = getattr(block, "type", None)
    if block_type == "thinking":
        return Reasoning(kind, provider, text=block.thinking or "", signature=block.signature or None)
    if block_type == "redacted_thinking":
        return Reasoning(ReasoningKind.REDACTED, provider, text=None, signature=block.data)
    return None


def reasonings_of(message: Any, request: RequestInfo) -> list[Reasoning]:
    """The message's thinking and redacted_thinking blocks, in vendor order (interleaved included)."""
    kind = _thinking_kind(request, getattr(message, "model", None))
    found = (_block_reasoning(b, request.provider, kind) for b in getattr(message, "content", None) or ())
    return [r for r in found if r is not None]


def _latest(usages: Sequence[Any], name: str) -> int | None:
    """The newest count of ``name`` (a stream's ``message_delta`` usage may leave earlier counts out)."""
    for usage in reversed(usages):
        value = getattr(usage, name, None)
        if isinstance(value, int):
            return value
    return None


def _usage_attributes(usages: Sequence[Any], into: dict[str, AttributeValue]) -> None:
    """Usage as the conventions count it: input tokens include the cache read and the cache creation."""
    usages = [u for u in usages if u is not None]
    if not usages:
        return
    uncached = _latest(usages, "input_tokens")
    cache_read = _latest(usages, "cache_read_input_tokens")
    cache_creation = _latest(usages, "cache_creation_input_tokens")
    if uncached is not None:
        into[attr.GEN_AI_USAGE_INPUT_TOKENS] = uncached + (cache_read or 0) + (cache_creation or 0)
    if cache_read is not None:
        into[attr.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = cache_read
    if cache_creation is not None:
        into[attr.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = cache_creation
    output = _latest(usages, "output_tokens")
    if output is not None:
        into[attr.GEN_AI_USAGE_OUTPUT_TOKENS] = output
    for usage in reversed(usages):
        thinking = field(field(usage, "output_tokens_details"), "thinking_tokens")  # a dict before anthropic 1
        if isinstance(thinking, int):
            into[attr.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = thinking
            break


def response_info(message: Any, request: RequestInfo) -> ResponseInfo:
    attributes: dict[str, AttributeValue] = {}
    if getattr(message, "id", None):
        attributes[attr.GEN_AI_RESPONSE_ID] = str(message.id)
    stop_reason = getattr(message, "stop_reason", None)
    reasons = finish_reasons([str(stop_reason)], FINISH_REASONS) if stop_reason else ()
    if reasons:
        attributes[attr.GEN_AI_RESPONSE_FINISH_REASONS] = reasons
    _usage_attributes([getattr(message, "usage", None)], attributes)
    model = getattr(message, "model", None)
    content = _output_messages(message, reasons)  # recorded with content capture on; the scrubber reads it
    return ResponseInfo(
        model=str(model) if model else None,
        attributes=attributes,
        output_messages=content,
        layout=_layout(getattr(message, "content", None)),
    )


class _Block:
    """One content block as streamed: the start event's block and its deltas, joined once at the end."""

    __slots__ = ("citations", "json", "signature", "start", "texts", "thinking")

    def __init__(self, start: Any) -> None:
        self.start = start
        thinking = field(start, "thinking")
        self.thinking: list[str] = [thinking] if thinking else []
        self.texts: list[str] = []
        self.json: list[str] = []
        self.citations: list[Any] = []
        self.signature: str = field(start, "signature") or ""

    def thinking_text(self) -> str:
        """The thinking deltas joined, once (capture and the binding record both read it)."""
        if len(self.thinking) != 1:
            self.thinking = ["".join(self.thinking)]
        return self.thinking[0]


class MessageStreamAccumulator:
    """Rebuilds a ``Messages`` stream (``create(stream=True)`` and the ``messages.stream()`` helper
    alike) in one pass per event: thinking and redacted blocks for capture, and every block in order for
    the continuation layer. ``thinking_delta`` appends, ``signature_delta`` replaces (as the SDK does)."""

    def __init__(self, request: RequestInfo) -> None:
        self._request = request
        self.blocks: dict[int, _Block] = {}
        self.message: Any = None
        self._stop_reason: str | None = None
        self._usages: list[Any] = []
        self.text_deltas: list[tuple[int, str]] | None = None
        """Set by a stream whose live view carries text: ``feed`` then appends each text delta."""

    def feed(self, event: Any) -> Sequence[tuple[int, str]]:
        """One event. The common one, a thinking delta, is tested first and costs one append (its text is
        joined once, in ``result``)."""
        if event.type == "content_block_delta":
            delta = event.delta
            delta_type = delta.type
            index = event.index
            block = self.blocks.get(index)
            if block is None:
                return ()
            if delta_type == "thinking_delta":
                text = delta.thinking
                block.thinking.append(text)
                return ((index, text),)
            if delta_type == "text_delta":
                text = delta.text
                block.texts.append(text)
                if self.text_deltas is not None:
                    self.text_deltas.append((index, text))
            elif delta_type == "signature_delta":
                block.signature = delta.signature
            elif delta_type == "input_json_delta":
                block.json.append(delta.partial_json)
            elif delta_type == "citations_delta":
                block.citations.append(delta.citation)
            return ()
        return self._feed_other(event)

    def _feed_other(self, event: Any) -> Sequence[tuple[int, str]]:
        """Every event but a block delta: a few per stream."""
        event_type = event.type
        if event_type == "content_block_start":
            block = self.blocks[event.index] = _Block(event.content_block)
            if block.thinking:
                return ((event.index, block.thinking[0]),)
            start = event.content_block
            if self.text_deltas is not None and getattr(start, "type", None) == "text" and start.text:
                self.text_deltas.append((event.index, start.text))
        elif event_type == "message_start":
            self.message = event.message
            self._usages.append(getattr(event.message, "usage", None))
        elif event_type == "message_delta":
            self._stop_reason = getattr(event.delta, "stop_reason", None) or self._stop_reason
            self._usages.append(getattr(event, "usage", None))
        return ()

    def result(self) -> tuple[list[Reasoning], ResponseInfo]:
        provider = self._request.provider
        kind = _thinking_kind(self._request, getattr(self.message, "model", None))
        reasonings = []
        for _, block in sorted(self.blocks.items()):
            block_type = getattr(block.start, "type", None)
            if block_type == "thinking":
                reasonings.append(
                    Reasoning(kind, provider, text=block.thinking_text(), signature=block.signature or None)
                )
            elif block_type == "redacted_thinking":
                reasonings.append(Reasoning(ReasoningKind.REDACTED, provider, text=None, signature=block.start.data))
        attributes: dict[str, AttributeValue] = {}
        message, model, stop_reason = self.message, None, self._stop_reason
        if message is not None:  # the ``message_start`` message: as ``response_info`` reads a complete one
            if getattr(message, "id", None):
                attributes[attr.GEN_AI_RESPONSE_ID] = str(message.id)
            stop_reason = stop_reason or getattr(message, "stop_reason", None)
            model = getattr(message, "model", None)
        reasons = finish_reasons([str(stop_reason)], FINISH_REASONS) if stop_reason else ()
        if reasons:
            attributes[attr.GEN_AI_RESPONSE_FINISH_REASONS] = reasons
        _usage_attributes(self._usages, attributes)  # the start message's usage is the first of them
        content = self._output_messages(reasons)  # recorded with content capture on; the scrubber reads it
        info = ResponseInfo(
            model=str(model) if model else None,
            attributes=attributes,
            output_messages=content,
            layout=self._layout(),
        )
        return reasonings, info

    def _layout(self) -> tuple[str, ...]:
        """As ``_layout`` reads a complete message: a tool call's arguments are its joined JSON deltas."""
        layout = LayoutBuilder()
        for _, block in sorted(self.blocks.items()):
            block_type = getattr(block.start, "type", None)
            if block_type in _REASONING_BLOCKS:
                layout.reasoning()
            elif block_type == "text":
                layout.text()
            elif _is_tool_call(block_type):
                arguments = "".join(block.json) or getattr(block.start, "input", None)
                layout.tool_call(getattr(block.start, "id", None), getattr(block.start, "name", None), arguments)
        return layout.entries()

    def _output_messages(self, reasons: Sequence[str]) -> list[dict[str, Any]]:
        parts = []
        for _, block in sorted(self.blocks.items()):
            kind = getattr(block.start, "type", None)
            if kind == "text":
                parts.append(text_part((getattr(block.start, "text", "") or "") + "".join(block.texts)))
            elif kind in ("tool_use", "server_tool_use"):
                raw = "".join(block.json)
                parts.append(
                    tool_call_part(block.start.id, block.start.name, raw or getattr(block.start, "input", None))
                )
            elif kind not in _REASONING_BLOCKS:
                parts.append({"type": str(kind or "unknown")})
        return _answer(parts, reasons)
