"""Anthropic Messages <-> loom-otel: pure functions over request kwargs, messages and stream events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loom_otel.core import Reasoning, ReasoningKind
from loom_otel.core import _attributes as attr
from loom_otel.core._calls._model_call import RequestInfo, ResponseInfo
from loom_otel.core._journal._writer import AttributeValue
from loom_otel.core._semconv import model_name, server_attributes
from loom_otel.core._shapes import field

__all__ = ["MessageStreamAccumulator", "provider_of", "reasonings_of", "request_info", "response_info"]

_PROVIDERS = {"AnthropicVertex": "gcp.vertex_ai", "AsyncAnthropicVertex": "gcp.vertex_ai"}
_BEDROCK = "aws.bedrock"


def provider_of(instance: Any) -> str:
    """``anthropic``; ``gcp.vertex_ai`` / ``aws.bedrock`` for those clients (GenAI conventions)."""
    name = type(getattr(instance, "_client", None)).__name__
    if "Bedrock" in name:
        return _BEDROCK
    return _PROVIDERS.get(name, "anthropic")


def _thinking_kind(kwargs: Mapping[str, Any]) -> ReasoningKind:
    """Readable thinking is a ``summary`` when the request asked ``display: "summarized"``."""
    thinking = kwargs.get("thinking")
    if isinstance(thinking, Mapping) and thinking.get("display") == "summarized":
        return ReasoningKind.SUMMARY
    return ReasoningKind.TEXT


def request_info(instance: Any, kwargs: Mapping[str, Any], *, stream: bool) -> RequestInfo:
    attributes: dict[str, AttributeValue] = {}
    max_tokens = kwargs.get("max_tokens")
    if isinstance(max_tokens, int):
        attributes[attr.GEN_AI_REQUEST_MAX_TOKENS] = max_tokens
    server_attributes(getattr(getattr(instance, "_client", None), "base_url", None), attributes)
    model = kwargs.get("model")
    return RequestInfo(
        provider=provider_of(instance),
        operation="chat",
        model=model_name(model),
        stream=stream,
        attributes=attributes,
        hints={"thinking_kind": _thinking_kind(kwargs)},
    )


def _block_reasoning(block: Any, provider: str, kind: ReasoningKind) -> Reasoning | None:
    block_type = getattr(block, "type", None)
    if block_type == "thinking":
        return Reasoning(kind, provider, text=block.thinking or "", signature=block.signature or None)
    if block_type == "redacted_thinking":
        return Reasoning(ReasoningKind.REDACTED, provider, text=None, signature=block.data)
    return None


def reasonings_of(message: Any, request: RequestInfo) -> list[Reasoning]:
    """The message's thinking and redacted_thinking blocks, in vendor order (interleaved included)."""
    kind = request.hints.get("thinking_kind", ReasoningKind.TEXT)
    assert isinstance(kind, ReasoningKind)
    found = (_block_reasoning(b, request.provider, kind) for b in getattr(message, "content", None) or ())
    return [r for r in found if r is not None]


def _usage_attributes(usage: Any, into: dict[str, AttributeValue]) -> None:
    if usage is None:
        return
    for key, name in (
        (attr.GEN_AI_USAGE_INPUT_TOKENS, "input_tokens"),
        (attr.GEN_AI_USAGE_OUTPUT_TOKENS, "output_tokens"),
        (attr.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, "cache_read_input_tokens"),
    ):
        value = getattr(usage, name, None)
        if isinstance(value, int):
            into[key] = value
    details = getattr(usage, "output_tokens_details", None)
    thinking_tokens = getattr(details, "thinking_tokens", None)
    if isinstance(thinking_tokens, int):
        into[attr.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = thinking_tokens


def response_info(message: Any) -> ResponseInfo:
    attributes: dict[str, AttributeValue] = {}
    if getattr(message, "id", None):
        attributes[attr.GEN_AI_RESPONSE_ID] = str(message.id)
    stop_reason = getattr(message, "stop_reason", None)
    if stop_reason:
        attributes[attr.GEN_AI_RESPONSE_FINISH_REASONS] = [str(stop_reason)]
    _usage_attributes(getattr(message, "usage", None), attributes)
    model = getattr(message, "model", None)
    return ResponseInfo(model=str(model) if model else None, attributes=attributes)


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


class MessageStreamAccumulator:
    """Rebuilds a ``Messages`` stream (``create(stream=True)`` and the ``messages.stream()`` helper
    alike) in one pass per event: thinking and redacted blocks for capture, and every block in order for
    the continuation layer. ``thinking_delta`` appends, ``signature_delta`` replaces (as the SDK does)."""

    def __init__(self, request: RequestInfo) -> None:
        self._request = request
        self.blocks: dict[int, _Block] = {}
        self.message: Any = None
        self._stop_reason: str | None = None
        self._usage: Any = None
        self.text_deltas: list[tuple[int, str]] | None = None
        """Set by a stream whose live view carries text: ``feed`` then appends each text delta."""

    def feed(self, event: Any) -> Sequence[tuple[int, str]]:
        event_type = event.type
        if event_type == "content_block_delta":
            block = self.blocks.get(event.index)
            if block is None:
                return ()
            delta = event.delta
            delta_type = delta.type
            if delta_type == "thinking_delta":
                block.thinking.append(delta.thinking)
                return ((event.index, delta.thinking),)
            if delta_type == "text_delta":
                block.texts.append(delta.text)
                if self.text_deltas is not None:
                    self.text_deltas.append((event.index, delta.text))
            elif delta_type == "input_json_delta":
                block.json.append(delta.partial_json)
            elif delta_type == "signature_delta":
                block.signature = delta.signature
            elif delta_type == "citations_delta":
                block.citations.append(delta.citation)
        elif event_type == "content_block_start":
            block = self.blocks[event.index] = _Block(event.content_block)
            if block.thinking:
                return ((event.index, block.thinking[0]),)
            start = event.content_block
            if self.text_deltas is not None and getattr(start, "type", None) == "text" and start.text:
                self.text_deltas.append((event.index, start.text))
        elif event_type == "message_start":
            self.message = event.message
            self._usage = getattr(event.message, "usage", None)
        elif event_type == "message_delta":
            self._stop_reason = getattr(event.delta, "stop_reason", None) or self._stop_reason
            self._usage = getattr(event, "usage", None) or self._usage
        return ()

    def result(self) -> tuple[list[Reasoning], ResponseInfo]:
        provider = self._request.provider
        kind = self._request.hints.get("thinking_kind", ReasoningKind.TEXT)
        assert isinstance(kind, ReasoningKind)
        reasonings = []
        for _, block in sorted(self.blocks.items()):
            block_type = getattr(block.start, "type", None)
            if block_type == "thinking":
                reasonings.append(
                    Reasoning(kind, provider, text="".join(block.thinking), signature=block.signature or None)
                )
            elif block_type == "redacted_thinking":
                reasonings.append(Reasoning(ReasoningKind.REDACTED, provider, text=None, signature=block.start.data))
        info = response_info(self.message) if self.message is not None else ResponseInfo()
        attributes = dict(info.attributes)
        if self._stop_reason:
            attributes[attr.GEN_AI_RESPONSE_FINISH_REASONS] = [self._stop_reason]
        _usage_attributes(self._usage, attributes)
        return reasonings, ResponseInfo(model=info.model, attributes=attributes)
