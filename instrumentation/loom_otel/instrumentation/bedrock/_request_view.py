"""Bedrock Converse as the continuation rule reads a request: pure functions (no call state, no I/O).

A block as botocore will serialize it (``None`` left out, bytes as base64); a reasoning block keyed by
its signature, or by its redacted bytes; the header from the system prompt and the tool configuration.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from loom_otel.core.vendor import (
    Block,
    Header,
    MessageView,
)
from loom_otel.core.vendor_helpers import text_bytes
from loom_otel.instrumentation.bedrock._extractors import PROVIDER

__all__ = [
    "ASSISTANT_HEAD",
    "REASONING_KINDS",
    "THINKING",
    "TOOL_CALL",
    "content_of",
    "header_of",
    "json_bytes",
    "kind_of",
    "message_view",
    "norm_value",
    "reasoning_block",
    "token_of",
]

THINKING: Final = "thinking"
_REDACTED: Final = "redacted_thinking"
REASONING_KINDS: Final = frozenset({THINKING, _REDACTED})
TOOL_CALL: Final = "tool_use"
ASSISTANT_HEAD: Final = b"M\x00assistant\x00"
_ENCODE: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def norm_value(value: Any) -> Any:
    """One reading of a request value as botocore serializes it: ``None`` left out, bytes as base64."""
    if isinstance(value, Mapping):
        return {str(k): norm_value(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [norm_value(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    return value


def json_bytes(value: Any) -> bytes:
    return text_bytes(_ENCODE(value))


def _digest(value: Any) -> bytes:
    return hashlib.sha256(json_bytes(value)).digest()


def kind_of(block: Any) -> str | None:
    """``thinking`` / ``redacted_thinking`` for a reasoning block, ``tool_use`` for a tool call."""
    if not isinstance(block, Mapping):
        return None
    reasoning = block.get("reasoningContent")
    if isinstance(reasoning, Mapping):
        return _REDACTED if "redactedContent" in reasoning else THINKING
    return TOOL_CALL if "toolUse" in block else None


def token_of(block: Mapping[str, Any], kind: str) -> str | None:
    """A reasoning block's continuation token: the signature, or the redacted bytes in base64."""
    reasoning = block["reasoningContent"]
    if kind == _REDACTED:
        data = reasoning.get("redactedContent")
        return base64.b64encode(data).decode() if isinstance(data, bytes | bytearray) and data else None
    text = reasoning.get("reasoningText")
    signature = text.get("signature") if isinstance(text, Mapping) else None
    return signature if isinstance(signature, str) and signature else None


def reasoning_block(block: Mapping[str, Any], kind: str) -> Block | None:
    token = token_of(block, kind)
    if token is None:
        return None
    key = hashlib.sha256(kind.encode() + b"\x00" + token.encode()).digest()
    canon = b"\x01" + kind.encode() + b"\x00" + key
    if kind == _REDACTED:
        return Block(key, canon, None)
    text = block["reasoningContent"]["reasoningText"].get("text")
    return Block(key, canon, text if isinstance(text, str) else None)


def content_of(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, Mapping) else None
    return list(content) if isinstance(content, list | tuple) else []


def message_view(message: Any) -> MessageView:
    """The block model of one request message."""
    role = str(message.get("role") or "") if isinstance(message, Mapping) else ""
    head = b"M\x00" + role.encode() + b"\x00"
    content = content_of(message)
    kinds = [kind_of(b) for b in content]
    if role != "assistant" and not REASONING_KINDS.intersection(kinds):
        return MessageView(head, [json_bytes(norm_value(content))])
    items: list[bytes | Block] = []
    round_key: str | None = None
    for block, kind in zip(content, kinds, strict=True):
        if kind in REASONING_KINDS:
            found = reasoning_block(block, str(kind))
            if found is not None:
                items.append(found)
                continue
        elif kind == TOOL_CALL and round_key is None and role == "assistant":
            call_id = block["toolUse"].get("toolUseId") if isinstance(block["toolUse"], Mapping) else None
            round_key = call_id if isinstance(call_id, str) else None
        items.append(json_bytes(norm_value(block)))
    return MessageView(head, items, round_key)


def header_of(kwargs: Mapping[str, Any]) -> Header:
    model = kwargs.get("modelId")
    return Header(
        PROVIDER,
        str(model) if model is not None else None,
        _digest(norm_value(kwargs.get("system")) or None),
        _digest(norm_value(kwargs.get("toolConfig")) or None),
    )
