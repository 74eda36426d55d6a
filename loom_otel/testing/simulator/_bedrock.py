"""Amazon Bedrock Converse (``POST /model/{modelId}/converse`` and ``/converse-stream``).

The model behind it is the simulator's Anthropic model: a Converse request is read as the Messages
request it stands for (``reasoningContent`` blocks as thinking blocks, ``toolConfig`` as tools,
``additionalModelRequestFields.thinking`` as the thinking setting) and checked with the same rules and
signatures; the answer is written back in Converse shapes, streamed in AWS event-stream framing.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
import zlib
from collections.abc import Mapping, MutableSet
from typing import Any, Final
from urllib.parse import unquote

from . import _anthropic
from ._exchange import RecordedRequest, Reply, json_reply, split_text
from ._script import Script
from ._signing import Signer

ROUTE: Final = re.compile(r"^/model/(?P<model>[^/]+)/(?P<method>converse|converse-stream)$")
_ERROR_TYPES: Final = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    429: "ThrottlingException",
    503: "ServiceUnavailableException",
}
_STOP_REASONS: Final = {"end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens"}


def error_reply(status: int, message: str) -> Reply:
    kind = _ERROR_TYPES.get(status, "InternalServerException" if status >= 500 else "ValidationException")
    return json_reply({"message": message}, status, {"x-amzn-ErrorType": kind})


def _blob(value: object) -> str | None:
    """A blob as the wire carries it (base64) -> the Anthropic block's opaque ``data`` string."""
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


def _to_anthropic_block(block: Mapping[str, Any]) -> dict[str, Any]:
    if "text" in block:
        return {"type": "text", "text": block["text"]}
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"] or {}
        if "redactedContent" in reasoning:
            return {"type": "redacted_thinking", "data": _blob(reasoning["redactedContent"])}
        text = reasoning.get("reasoningText") or {}
        return {"type": "thinking", "thinking": text.get("text"), "signature": text.get("signature")}
    if "toolUse" in block:
        use = block["toolUse"]
        return {"type": "tool_use", "id": use.get("toolUseId"), "name": use.get("name"), "input": use.get("input")}
    if "toolResult" in block:
        result = block["toolResult"]
        parts = [
            {"type": "text", "text": p["text"] if "text" in p else json.dumps(p.get("json"))}
            for p in result.get("content") or ()
            if isinstance(p, Mapping)
        ]
        return {"type": "tool_result", "tool_use_id": result.get("toolUseId"), "content": parts}
    return {"type": next(iter(block), "unknown")}


def _to_anthropic(model: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages request a Converse request stands for."""
    messages = [
        {"role": m.get("role"), "content": [_to_anthropic_block(b) for b in m.get("content") or ()]}
        for m in body.get("messages") or ()
        if isinstance(m, Mapping)
    ]
    request: dict[str, Any] = {"model": model, "messages": messages}
    system = [{"type": "text", "text": s["text"]} for s in body.get("system") or () if "text" in s]
    if system:
        request["system"] = system
    tools = []
    for tool in (body.get("toolConfig") or {}).get("tools") or ():
        spec = tool.get("toolSpec") or {}
        schema = (spec.get("inputSchema") or {}).get("json")
        tools.append({"name": spec.get("name"), "description": spec.get("description"), "input_schema": schema})
    if tools:
        request["tools"] = tools
    extra = body.get("additionalModelRequestFields") or {}
    if isinstance(extra, Mapping) and isinstance(extra.get("thinking"), Mapping):
        request["thinking"] = extra["thinking"]
    max_tokens = (body.get("inferenceConfig") or {}).get("maxTokens")
    request["max_tokens"] = max_tokens or 4096
    return request


def _to_converse_block(block: Mapping[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "thinking":
        return {"reasoningContent": {"reasoningText": {"text": block["thinking"], "signature": block["signature"]}}}
    if kind == "redacted_thinking":
        return {"reasoningContent": {"redactedContent": base64.b64encode(block["data"].encode()).decode()}}
    if kind == "tool_use":
        return {"toolUse": {"toolUseId": block["id"], "name": block["name"], "input": block["input"]}}
    return {"text": block.get("text", "")}


def _usage(usage: Mapping[str, Any]) -> dict[str, int]:
    read, write = usage.get("cache_read_input_tokens") or 0, usage.get("cache_creation_input_tokens") or 0
    inputs, outputs = usage["input_tokens"] + read + write, usage["output_tokens"]
    found = {"inputTokens": inputs, "outputTokens": outputs, "totalTokens": inputs + outputs}
    if read:
        found["cacheReadInputTokens"] = read
    if write:
        found["cacheWriteInputTokens"] = write
    return found


def handle(
    request: RecordedRequest, model: str, script: Script, signer: Signer, cache: MutableSet[str], *, stream: bool
) -> Reply:
    body = request.body
    if not isinstance(body, Mapping) or not isinstance(body.get("messages"), list):
        return error_reply(400, "1 validation error detected: Value at 'messages' failed to satisfy constraint")
    inner = RecordedRequest(request.method, "/v1/messages", {}, {}, _to_anthropic(unquote(model), body), "anthropic")
    reply = _anthropic.handle(inner, script, signer, cache)
    answer = json.loads(reply.body)
    if reply.status != 200:
        return error_reply(reply.status, str(answer.get("error", {}).get("message")))
    content = [_to_converse_block(b) for b in answer["content"]]
    stop_reason = _STOP_REASONS.get(answer["stop_reason"], answer["stop_reason"])
    usage = _usage(answer["usage"])
    if not stream:
        payload = {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop_reason,
            "usage": usage,
            "metrics": {"latencyMs": 1},
        }
        return json_reply(payload, headers={"x-amzn-RequestId": answer["id"]})
    frames = _stream_frames(content, stop_reason, usage, script.stream_chunks)
    headers = {"x-amzn-RequestId": answer["id"]}
    return Reply(200, "application/vnd.amazon.eventstream", tuple(frames), stream=True, headers=headers)


def _stream_frames(content: list[dict[str, Any]], stop_reason: str, usage: dict[str, int], chunks: int) -> list[bytes]:
    frames = [event_message("messageStart", {"role": "assistant"})]

    def delta(index: int, value: dict[str, Any]) -> None:
        frames.append(event_message("contentBlockDelta", {"contentBlockIndex": index, "delta": value}))

    for index, block in enumerate(content):
        if "toolUse" in block:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            frames.append(event_message("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            for piece in split_text(json.dumps(use["input"]), 2):
                delta(index, {"toolUse": {"input": piece}})
        elif "reasoningContent" in block:
            reasoning = block["reasoningContent"]
            if "redactedContent" in reasoning:
                delta(index, {"reasoningContent": {"redactedContent": reasoning["redactedContent"]}})
            else:
                for piece in split_text(reasoning["reasoningText"]["text"], chunks):
                    delta(index, {"reasoningContent": {"text": piece}})
                delta(index, {"reasoningContent": {"signature": reasoning["reasoningText"]["signature"]}})
        else:
            for piece in split_text(block["text"], 2):
                delta(index, {"text": piece})
        frames.append(event_message("contentBlockStop", {"contentBlockIndex": index}))
    frames.append(event_message("messageStop", {"stopReason": stop_reason}))
    frames.append(event_message("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}))
    return frames


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return struct.pack("!B", len(raw_name)) + raw_name + struct.pack("!BH", 7, len(raw_value)) + raw_value


def event_message(event_type: str, payload: object) -> bytes:
    """One AWS event-stream message: prelude (total length, headers length, prelude CRC32), the
    ``:event-type`` / ``:content-type`` / ``:message-type`` headers, the JSON payload, the message CRC32."""
    headers = (
        _header(":event-type", event_type)
        + _header(":content-type", "application/json")
        + _header(":message-type", "event")
    )
    body = json.dumps(payload).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack("!II", total, len(headers))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack("!I", zlib.crc32(message))
