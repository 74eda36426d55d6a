"""The Anthropic Messages API (``POST /v1/messages``, beta features included): script, signatures, rules."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, MutableSet
from typing import Any, Final

from ._exchange import RecordedRequest, Reply, estimate_tokens, json_reply, split_text, sse_frame, sse_reply
from ._script import Script, answer_text, request_id, sample_args, structured_answer, thinking_text
from ._signing import Signer, Verdict, canonical_json

_SIGNATURE_MAGIC: Final = b"\x12\xa4\x03"
_REDACTED_MAGIC: Final = b"\x12\x6c\x0a"
_THINKING_KINDS: Final = frozenset({"thinking", "redacted_thinking"})
_IGNORED_KEYS: Final = frozenset({"cache_control"})
_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_TOOL_LOOP_MESSAGE: Final = (
    "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. "
    "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
    "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include "
    "thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult "
    "our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
OVERLOADED_EVENT: Final = sse_frame(
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error"
)


def error_reply(status: int, message: str) -> Reply:
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    payload = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_sim"}
    return json_reply(payload, status, {"request-id": "req_sim"})


# --- binding -------------------------------------------------------------------------------------


def _clean(value: Any) -> Any:
    """Drop what the API ignores for binding: ``None`` values, ``cache_control``, empty citations."""
    if isinstance(value, Mapping):
        return {
            str(k): _clean(v)
            for k, v in value.items()
            if v is not None and k not in _IGNORED_KEYS and not (k == "citations" and not v)
        }
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def content_blocks(content: object) -> list[dict[str, Any]]:
    """A message's content as a list of block dicts (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [dict(b) for b in content if isinstance(b, Mapping)]
    return []


def _norm_block(block: Mapping[str, Any]) -> Any:
    cleaned = _clean(block)
    if cleaned.get("type") == "tool_result" and isinstance(cleaned.get("content"), str):
        cleaned["content"] = [{"type": "text", "text": cleaned["content"]}]
    if cleaned.get("is_error") is False:
        del cleaned["is_error"]
    return cleaned


def _norm_message(message: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "role": message.get("role"),
        "content": [_norm_block(b) for b in content_blocks(message.get("content"))],
    }


def _norm_system(system: object) -> Any:
    if isinstance(system, str):
        return [{"type": "text", "text": system}] if system else None
    return _clean(system) or None


def binding(body: Mapping[str, Any], index: int, partial: list[dict[str, Any]]) -> dict[str, Any]:
    """What a block at ``messages[index].content[len(partial)]`` is bound to."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    return {
        "model": body.get("model"),
        "system": _norm_system(body.get("system")),
        "tools": _clean(body.get("tools")) or None,
        "messages": [_norm_message(m) for m in messages[:index]],
        "partial": [_norm_block(b) for b in partial],
    }


def _sign_block(signer: Signer, body: Mapping[str, Any], block: dict[str, Any], earlier: list[Any]) -> None:
    bound = binding(body, len(body.get("messages") or []), earlier)
    model = str(body.get("model"))
    if block["type"] == "thinking":
        block["signature"] = signer.token(
            _SIGNATURE_MAGIC, "anthropic/thinking", bound, payload=block["thinking"], model=model
        )
    else:
        block["data"] = signer.opaque(_REDACTED_MAGIC, "anthropic/redacted_thinking", bound, model=model)


def _verify_block(signer: Signer, body: Mapping[str, Any], index: int, blocks: list[Any], j: int) -> Verdict:
    block = blocks[j]
    bound = binding(body, index, blocks[:j])
    model = str(body.get("model"))
    if block.get("type") == "thinking":
        signature, text = block.get("signature"), block.get("thinking")
        if not isinstance(signature, str) or not isinstance(text, str):
            return "malformed"
        return signer.check(_SIGNATURE_MAGIC, "anthropic/thinking", signature, bound, payload=text, model=model)
    data = block.get("data")
    if not isinstance(data, str):
        return "malformed"
    return signer.check(_REDACTED_MAGIC, "anthropic/redacted_thinking", data, bound, model=model)


# --- strict rules ----------------------------------------------------------------------------------


def _check(body: Mapping[str, Any], signer: Signer, drop: bool) -> tuple[str | None, list[dict[str, str]]]:
    """Vendor rules on the received request: an error message, or the blocks to drop."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    dropped: list[dict[str, str]] = []
    for i, message in enumerate(messages):
        blocks = content_blocks(message.get("content"))
        for j, block in enumerate(blocks):
            kind = block.get("type")
            if kind not in _THINKING_KINDS:
                continue
            if message.get("role") != "assistant":
                return f"messages.{i}.content.{j}: `{kind}` blocks are only allowed in `assistant` messages", []
            verdict = _verify_block(signer, body, i, blocks, j)
            if verdict == "ok" and not dropped:
                continue
            reason = "model_binding_mismatch" if verdict == "model_mismatch" else "prefix_binding_mismatch"
            if not drop:
                return _invalid_block_message(i, j, str(kind), verdict), []
            dropped.append({"type": "thinking_dropped", "path": f"messages.{i}.content.{j}", "reason": reason})
    return _check_tool_loop(body, messages), dropped


def _invalid_block_message(i: int, j: int, kind: str, verdict: Verdict) -> str:
    field = "`signature` in `thinking`" if kind == "thinking" else "`data` in `redacted_thinking`"
    if verdict == "model_mismatch":
        detail = "The block was produced by a different model."
    else:
        detail = "The block is bound to a different conversation."
    return (
        f"messages.{i}.content.{j}: Invalid {field} block. {detail} Remove the block, or set "
        '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
    )


def _check_tool_loop(body: Mapping[str, Any], messages: list[Mapping[str, Any]]) -> str | None:
    if not _thinking_on(body) or len(messages) < 2:
        return None
    last, previous = messages[-1], messages[-2]
    answers = any(b.get("type") == "tool_result" for b in content_blocks(last.get("content")))
    blocks = content_blocks(previous.get("content"))
    calls = any(b.get("type") == "tool_use" for b in blocks)
    if last.get("role") != "user" or previous.get("role") != "assistant" or not answers or not calls:
        return None
    if blocks[0].get("type") in _THINKING_KINDS:
        return None
    return _TOOL_LOOP_MESSAGE.format(i=len(messages) - 2, found=blocks[0].get("type"))


# --- script ----------------------------------------------------------------------------------------


def _thinking(body: Mapping[str, Any]) -> Mapping[str, Any]:
    thinking = body.get("thinking")
    return thinking if isinstance(thinking, Mapping) else {}


def _thinking_on(body: Mapping[str, Any]) -> bool:
    return _thinking(body).get("type") in ("enabled", "adaptive")


def _tool_rounds(messages: list[Mapping[str, Any]]) -> int:
    """Tool results answered since the last plain user message (the current turn)."""
    rounds = 0
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        if not any(b.get("type") == "tool_result" for b in content_blocks(message.get("content"))):
            break
        rounds += 1
    return rounds


def _question(messages: list[Mapping[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        texts = [str(b.get("text")) for b in content_blocks(message.get("content")) if b.get("type") == "text"]
        if texts:
            return " ".join(texts)
    return ""


def _compose(body: Mapping[str, Any], script: Script, signer: Signer) -> tuple[list[dict[str, Any]], str]:
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    tools = [t for t in body.get("tools") or [] if isinstance(t, Mapping) and "input_schema" in t]
    choice = body.get("tool_choice")
    use_tools = bool(tools) and _tool_rounds(messages) < script.max_tool_rounds
    use_tools = use_tools and not (isinstance(choice, Mapping) and choice.get("type") == "none")
    question = _question(messages)
    display_text = _thinking(body).get("display") != "omitted"
    thinking_on = _thinking_on(body) or (_thinking(body).get("type") == "between_tools" and use_tools)
    blocks: list[dict[str, Any]] = []

    def think(default: str) -> None:
        if thinking_on:
            text = script.reasoning(default) if display_text else ""
            blocks.append({"type": "thinking", "thinking": text, "raw": script.reasoning(default)})

    def call(tool: Mapping[str, Any], n: int) -> None:
        args = sample_args(tool.get("input_schema"))
        tool_id = request_id("toolu_", body, f"{n}")
        blocks.append({"type": "tool_use", "id": tool_id, "name": str(tool.get("name")), "input": args})

    if use_tools:
        first = tools[0]
        think(thinking_text(question, str(first.get("name"))))
        blocks.append({"type": "text", "text": f"Let me call {first.get('name')} to find out."})
        call(first, 0)
        if script.interleaved and len(tools) >= 2:
            think(thinking_text(question, str(tools[1].get("name"))))
            call(tools[1], 1)
        stop_reason = "tool_use"
    else:
        think(thinking_text(question, None))
        if thinking_on and script.redacted:
            blocks.append({"type": "redacted_thinking", "raw": ""})
        text = structured_answer(_output_schema(body)) or answer_text(question, _tool_rounds(messages) > 0)
        blocks.append({"type": "text", "text": text})
        stop_reason = "end_turn"
    for k, block in enumerate(blocks):
        if block["type"] in _THINKING_KINDS:
            _sign_block(signer, body, block, [_public(b) for b in blocks[:k]])
    return blocks, stop_reason


def _output_schema(body: Mapping[str, Any]) -> object:
    config = body.get("output_config")
    fmt = config.get("format") if isinstance(config, Mapping) else body.get("output_format")
    return fmt.get("schema") if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema" else None


def _public(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "raw"}


def _cached_prefix(body: Mapping[str, Any]) -> list[Any] | None:
    """The messages up to the last one with a ``cache_control`` block (the prompt-cache breakpoint)."""
    messages = body.get("messages") or []
    last = None
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list) and any(isinstance(b, Mapping) and "cache_control" in b for b in content):
            last = index
    return None if last is None else list(messages[: last + 1])


def prompt_cache(body: Mapping[str, Any], cache: MutableSet[str]) -> tuple[int, int]:
    """(cache creation, cache read) input tokens: a breakpoint's prefix seen before is read, else written."""
    prefix = _cached_prefix(body)
    if prefix is None:
        return 0, 0
    encoded = canonical_json(prefix)
    tokens = estimate_tokens(encoded.decode())
    key = hashlib.sha256(encoded).hexdigest()
    if key in cache:
        return 0, tokens
    cache.add(key)
    return tokens, 0


def _usage(
    body: Mapping[str, Any], blocks: list[dict[str, Any]], *, final: bool = True, cached: tuple[int, int] = (0, 0)
) -> dict[str, Any]:
    thinking_tokens = sum(estimate_tokens(str(b.get("raw", ""))) for b in blocks if b["type"] == "thinking")
    thinking_tokens += sum(64 for b in blocks if b["type"] == "redacted_thinking")
    visible = "".join(str(b.get("text", "")) + json.dumps(b.get("input", "")) for b in blocks)
    sent = estimate_tokens(canonical_json(body.get("messages")).decode(errors="replace"))
    usage: dict[str, Any] = {
        "input_tokens": max(0, sent - sum(cached)),
        "cache_creation_input_tokens": cached[0],
        "cache_read_input_tokens": cached[1],
        "output_tokens": estimate_tokens(visible) + thinking_tokens if final else 1,
        "service_tier": "standard",
    }
    if thinking_tokens and final:
        usage["output_tokens_details"] = {"thinking_tokens": thinking_tokens}
    return usage


# --- entry point -----------------------------------------------------------------------------------


def handle(request: RecordedRequest, script: Script, signer: Signer, cache: MutableSet[str]) -> Reply:
    body = request.body
    if not isinstance(body, Mapping):
        return error_reply(400, "Request body must be a JSON object")
    if not isinstance(body.get("model"), str):
        return error_reply(400, "model: Field required")
    if not isinstance(body.get("messages"), list):
        return error_reply(400, "messages: Field required")
    block_binding = _thinking(body).get("block_binding")
    drop = isinstance(block_binding, Mapping) and block_binding.get("prefix_mismatch_behavior") == "drop_block"
    thread = body.get("thread")
    dropped: list[dict[str, str]] = []
    if script.strict and not (isinstance(thread, Mapping) and thread.get("type") == "continue"):
        problem, dropped = _check(body, signer, drop)
        if problem is not None:
            return error_reply(400, problem)
    blocks, stop_reason = _compose(body, script, signer)
    cached = prompt_cache(body, cache)
    message: dict[str, Any] = {
        "id": request_id("msg_sim_", body),
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": [_public(b) for b in blocks],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": _usage(body, blocks, cached=cached),
    }
    if isinstance(block_binding, Mapping):
        message["input_transformations"] = dropped
    if body.get("stream"):
        return sse_reply(_stream_frames(message, blocks, body, script, cached))
    return json_reply(message, headers={"request-id": "req_sim"})


def _stream_frames(
    message: dict[str, Any],
    blocks: list[dict[str, Any]],
    body: Mapping[str, Any],
    script: Script,
    cached: tuple[int, int],
) -> list[bytes]:
    start = {**message, "content": [], "stop_reason": None, "usage": _usage(body, blocks, final=False, cached=cached)}
    frames = [sse_frame({"type": "message_start", "message": start}, "message_start")]

    def event(name: str, **fields: Any) -> None:
        frames.append(sse_frame({"type": name, **fields}, name))

    def delta(index: int, **fields: Any) -> None:
        event("content_block_delta", index=index, delta=fields)

    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "thinking":
            event("content_block_start", index=index, content_block={**block, "thinking": "", "signature": ""})
            if index == 0:
                event("ping")
            for piece in split_text(block["thinking"], script.stream_chunks):
                delta(index, type="thinking_delta", thinking=piece)
            delta(index, type="signature_delta", signature=block["signature"])
        elif kind == "text":
            event("content_block_start", index=index, content_block={"type": "text", "text": ""})
            for piece in split_text(block["text"], 2):
                delta(index, type="text_delta", text=piece)
        elif kind == "tool_use":
            event("content_block_start", index=index, content_block={**block, "input": {}})
            delta(index, type="input_json_delta", partial_json="")
            for piece in split_text(json.dumps(block["input"]), 2):
                delta(index, type="input_json_delta", partial_json=piece)
        else:
            event("content_block_start", index=index, content_block=block)
        event("content_block_stop", index=index)
    usage = {k: v for k, v in message["usage"].items() if k in ("output_tokens", "output_tokens_details")}
    event("message_delta", delta={"stop_reason": message["stop_reason"], "stop_sequence": None}, usage=usage)
    event("message_stop")
    return frames
