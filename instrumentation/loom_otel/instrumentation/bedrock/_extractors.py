"""Bedrock Converse <-> loom-otel: pure functions over request parameters, responses and stream events."""

from __future__ import annotations

import re
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
    finish_reasons,
    model_name,
    reasoning_input_part,
    request_parameters,
    server_attributes,
    text_part,
    tool_call_part,
    tool_response_part,
)

__all__ = ["PROVIDER", "ConverseStreamAccumulator", "reasonings_of", "request_id_of", "request_info", "response_info"]

PROVIDER: Final = "aws.bedrock"
_PARAMETERS: Final = {
    attr.GEN_AI_REQUEST_MAX_TOKENS: "maxTokens",
    attr.GEN_AI_REQUEST_TEMPERATURE: "temperature",
    attr.GEN_AI_REQUEST_TOP_P: "topP",
    attr.GEN_AI_REQUEST_STOP_SEQUENCES: "stopSequences",
}
FINISH_REASONS: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_call",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
"""Converse ``stopReason`` -> the conventions' finish reason (others pass as they are, lower-cased)."""
_CLAUDE: Final = re.compile(r"claude-(?:(?:opus|sonnet|haiku)-)?(\d+)")
_SUMMARISES_FROM: Final = 4


def _kind(model: str) -> ReasoningKind:
    """Claude 4 and later return a summary of their thinking (as on the direct API); others the text."""
    found = _CLAUDE.search(model)
    return ReasoningKind.SUMMARY if found and int(found[1]) >= _SUMMARISES_FROM else ReasoningKind.TEXT


def _thinking(kwargs: Mapping[str, Any]) -> dict[str, AttributeValue]:
    extra = kwargs.get("additionalModelRequestFields")
    thinking = extra.get("thinking") if isinstance(extra, Mapping) else None
    out: dict[str, AttributeValue] = {}
    if isinstance(thinking, Mapping):
        kind, budget = thinking.get("type"), thinking.get("budget_tokens")
        if isinstance(kind, str):
            out[attr.REQUEST_THINKING_TYPE] = kind
        if isinstance(budget, int) and not isinstance(budget, bool):
            out[attr.REQUEST_THINKING_BUDGET] = budget
    return out


def request_info(instance: Any, kwargs: Mapping[str, Any], *, stream: bool) -> RequestInfo:
    """What the span says at start: ``chat <modelId>``, the ``inferenceConfig`` parameters, the endpoint."""
    attributes: dict[str, AttributeValue] = {}
    config = kwargs.get("inferenceConfig")
    inference = config if isinstance(config, Mapping) else {}
    request_parameters(inference.get, _PARAMETERS, attributes)
    server_attributes(getattr(getattr(instance, "meta", None), "endpoint_url", None), attributes)
    hints: dict[str, object] = {}
    mode = content_mode()
    if mode != "NO_CONTENT":
        attach_request(
            mode,
            system=_parts(kwargs.get("system")) or None,
            messages=[
                {"role": str(m.get("role") or "user"), "parts": _parts(m.get("content"))}
                for m in kwargs.get("messages") or ()
                if isinstance(m, Mapping)
            ],
            tools=_tools(kwargs),
            attributes=attributes,
            hints=hints,
        )
    return RequestInfo(
        provider=PROVIDER,
        operation="chat",
        model=model_name(kwargs.get("modelId")),
        stream=stream,
        attributes=attributes,
        hints=hints,
        thinking=_thinking(kwargs),
    )


# --- message content (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT) -------------------------


def _tool_output(content: Any) -> Any:
    texts = [b.get("text") for b in content or () if isinstance(b, Mapping) and "text" in b]
    return "".join(t for t in texts if isinstance(t, str))


def _part(block: Mapping[str, Any]) -> dict[str, Any]:
    if "text" in block:
        return text_part(str(block["text"]))
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"] or {}
        if "redactedContent" in reasoning:
            return reasoning_input_part(None, reasoning["redactedContent"])
        text = reasoning.get("reasoningText") or {}
        return reasoning_input_part(text.get("text"), text.get("signature"))
    if "toolUse" in block:
        use = block["toolUse"]
        return tool_call_part(use.get("toolUseId"), use.get("name"), use.get("input"))
    if "toolResult" in block:
        result = block["toolResult"]
        return tool_response_part(result.get("toolUseId"), _tool_output(result.get("content")))
    return {"type": str(next(iter(block), "unknown"))}  # images, documents, cache points: their kind only


def _parts(content: Any) -> list[dict[str, Any]]:
    return [_part(b) for b in content or () if isinstance(b, Mapping)]


def _tools(kwargs: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    config = kwargs.get("toolConfig")
    found = []
    for tool in (config.get("tools") if isinstance(config, Mapping) else None) or ():
        spec = tool.get("toolSpec") if isinstance(tool, Mapping) else None
        if isinstance(spec, Mapping):
            schema = spec.get("inputSchema")
            parameters = schema.get("json") if isinstance(schema, Mapping) else None
            found.append(
                {
                    "type": "function",
                    "name": spec.get("name"),
                    "description": spec.get("description"),
                    "parameters": parameters,
                }
            )
    return found or None


# --- the answer -----------------------------------------------------------------------------------


def _block_reasoning(block: Mapping[str, Any], kind: ReasoningKind) -> Reasoning | None:
    reasoning = block.get("reasoningContent")
    if not isinstance(reasoning, Mapping):
        return None
    if "redactedContent" in reasoning:
        return Reasoning(ReasoningKind.REDACTED, PROVIDER, text=None, signature=reasoning["redactedContent"])
    text = reasoning.get("reasoningText") or {}
    return Reasoning(kind, PROVIDER, text=text.get("text") or "", signature=text.get("signature") or None)


def _content(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    output = response.get("output")
    message = output.get("message") if isinstance(output, Mapping) else None
    content = message.get("content") if isinstance(message, Mapping) else None
    return [b for b in content or () if isinstance(b, Mapping)]


def reasonings_of(response: Mapping[str, Any], request: RequestInfo) -> list[Reasoning]:
    """The answer's ``reasoningContent`` blocks, in order (interleaved included)."""
    kind = _kind(request.model)
    found = (_block_reasoning(b, kind) for b in _content(response))
    return [r for r in found if r is not None]


def _usage_attributes(usage: object, into: dict[str, AttributeValue]) -> None:
    """Converse's ``inputTokens`` leaves the cache out; the conventions' input tokens count it."""
    if not isinstance(usage, Mapping):
        return
    uncached, read, write = (
        usage.get("inputTokens"),
        usage.get("cacheReadInputTokens"),
        usage.get("cacheWriteInputTokens"),
    )
    if isinstance(uncached, int):
        into[attr.GEN_AI_USAGE_INPUT_TOKENS] = uncached + (read or 0) + (write or 0)
    if isinstance(read, int):
        into[attr.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = read
    if isinstance(write, int):
        into[attr.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = write
    if isinstance(usage.get("outputTokens"), int):
        into[attr.GEN_AI_USAGE_OUTPUT_TOKENS] = usage["outputTokens"]


def _facts(stop_reason: object, usage: object, request_id: object, blocks: Sequence[Mapping[str, Any]]) -> ResponseInfo:
    attributes: dict[str, AttributeValue] = {}
    if isinstance(request_id, str) and request_id:
        attributes[attr.GEN_AI_RESPONSE_ID] = request_id
    reasons = finish_reasons([str(stop_reason)], FINISH_REASONS) if stop_reason else ()
    if reasons:
        attributes[attr.GEN_AI_RESPONSE_FINISH_REASONS] = reasons
    _usage_attributes(usage, attributes)
    layout = LayoutBuilder()
    parts = []
    for block in blocks:
        if "reasoningContent" in block:
            layout.reasoning()
            continue
        if "text" in block:
            layout.text()
        elif "toolUse" in block:
            use = block["toolUse"]
            layout.tool_call(use.get("toolUseId"), use.get("name"), use.get("input"))
        parts.append(_part(block))
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if reasons:
        message["finish_reason"] = reasons[0]
    return ResponseInfo(model=None, attributes=attributes, output_messages=[message], layout=layout.entries())


def request_id_of(response: Mapping[str, Any]) -> object:
    """The AWS request id botocore reads off the response headers (``gen_ai.response.id``)."""
    metadata = response.get("ResponseMetadata")
    return metadata.get("RequestId") if isinstance(metadata, Mapping) else None


def response_info(response: Mapping[str, Any], request: RequestInfo) -> ResponseInfo:
    return _facts(response.get("stopReason"), response.get("usage"), request_id_of(response), _content(response))


class _Block:
    """One streamed content block: its start, and its deltas joined once at the end."""

    __slots__ = ("redacted", "signature", "start", "texts", "thinking", "tool_input")

    def __init__(self) -> None:
        self.start: Mapping[str, Any] = {}
        self.thinking: list[str] = []
        self.signature: str | None = None
        self.redacted: bytes | None = None
        self.texts: list[str] = []
        self.tool_input: list[str] = []

    def block(self) -> dict[str, Any]:
        """The block as a complete ``converse`` answer holds it."""
        if self.redacted is not None:
            return {"reasoningContent": {"redactedContent": self.redacted}}
        if self.thinking or self.signature is not None:
            return {
                "reasoningContent": {"reasoningText": {"text": "".join(self.thinking), "signature": self.signature}}
            }
        use = self.start.get("toolUse")
        if isinstance(use, Mapping):
            return {"toolUse": {**use, "input": "".join(self.tool_input)}}
        return {"text": "".join(self.texts)}


class ConverseStreamAccumulator:
    """Rebuilds a ``converse_stream`` answer from its events: ``reasoningContent`` deltas (text appends,
    signature and redacted content set) into the same blocks as a complete ``converse`` answer."""

    def __init__(self, request: RequestInfo, request_id: object = None) -> None:
        self._request = request
        self._request_id = request_id
        self.blocks: dict[int, _Block] = {}
        self._stop_reason: object = None
        self._usage: object = None
        self.text_deltas: list[tuple[int, str]] | None = None

    def _block(self, index: object) -> _Block:
        key = index if isinstance(index, int) else 0
        block = self.blocks.get(key)
        if block is None:
            block = self.blocks[key] = _Block()
        return block

    def feed(self, event: Any) -> Sequence[tuple[int, str]]:
        if not isinstance(event, Mapping):
            return ()
        found = event.get("contentBlockDelta")
        if isinstance(found, Mapping):
            index = found.get("contentBlockIndex")
            block = self._block(index)
            delta = found.get("delta") or {}
            reasoning = delta.get("reasoningContent")
            if isinstance(reasoning, Mapping):
                if "text" in reasoning:
                    block.thinking.append(reasoning["text"])
                    return ((index if isinstance(index, int) else 0, reasoning["text"]),)
                if "signature" in reasoning:
                    block.signature = reasoning["signature"]
                if "redactedContent" in reasoning:
                    block.redacted = reasoning["redactedContent"]
            elif "text" in delta:
                block.texts.append(delta["text"])
                if self.text_deltas is not None and isinstance(index, int):
                    self.text_deltas.append((index, delta["text"]))
            elif isinstance(delta.get("toolUse"), Mapping):
                block.tool_input.append(str(delta["toolUse"].get("input") or ""))
            return ()
        start = event.get("contentBlockStart")
        if isinstance(start, Mapping):
            self._block(start.get("contentBlockIndex")).start = start.get("start") or {}
        elif isinstance(event.get("messageStop"), Mapping):
            self._stop_reason = event["messageStop"].get("stopReason")
        elif isinstance(event.get("metadata"), Mapping):
            self._usage = event["metadata"].get("usage")
        return ()

    def result(self) -> tuple[list[Reasoning], ResponseInfo]:
        blocks = [block.block() for _, block in sorted(self.blocks.items())]
        kind = _kind(self._request.model)
        found = (_block_reasoning(b, kind) for b in blocks)
        return [r for r in found if r is not None], _facts(self._stop_reason, self._usage, self._request_id, blocks)
