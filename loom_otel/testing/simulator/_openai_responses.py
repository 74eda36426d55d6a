"""The OpenAI Responses API (``POST /v1/responses``): reasoning items with bound ``encrypted_content``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from ._exchange import RecordedRequest, Reply, estimate_tokens, json_reply, split_text, sse_frame, sse_reply
from ._openai_chat import CREATED, error_reply
from ._script import Script, answer_text, request_id, sample_args, structured_answer, thinking_text
from ._signing import Signer

_MAGIC: Final = b"\x67\x41\x41"
_DOMAIN: Final = "openai/reasoning"


def _items(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    return [dict(i) for i in raw or [] if isinstance(i, Mapping)]


def _norm_item(item: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in item.items() if v is not None and k != "status"}
    if "type" not in out and "role" in out:
        out["type"] = "message"
    content = out.get("content")
    if out.get("type") == "message" and isinstance(content, str):
        kind = "output_text" if out.get("role") == "assistant" else "input_text"
        out["content"] = [{"type": kind, "text": content}]
    elif isinstance(content, list):
        out["content"] = [
            {k: v for k, v in p.items() if v is not None} if isinstance(p, Mapping) else p for p in content
        ]
    return out


def binding(body: Mapping[str, Any], items: list[dict[str, Any]], index: int) -> dict[str, Any]:
    return {
        "model": body.get("model"),
        "instructions": body.get("instructions") or None,
        "tools": body.get("tools") or None,
        "input": [_norm_item(i) for i in items[:index]],
    }


def _check(body: Mapping[str, Any], items: list[dict[str, Any]], signer: Signer) -> list[dict[str, Any]]:
    """Reasoning items whose ``encrypted_content`` does not match their prefix: removed, and reported."""
    removed: list[dict[str, Any]] = []
    model = str(body.get("model"))
    for index, item in enumerate(items):
        token = item.get("encrypted_content")
        if item.get("type") != "reasoning" or not isinstance(token, str):
            continue
        verdict = signer.check(_MAGIC, _DOMAIN, token, binding(body, items, index), model=model)
        if verdict != "ok":
            reason = "model_mismatch" if verdict == "model_mismatch" else "prefix_mismatch"
            removed.append({"id": item.get("id"), "action": "removed", "type": "reasoning", "reason": reason})
    return removed


def _turn(items: list[dict[str, Any]]) -> tuple[str, int]:
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.get("role") == "user" and item.get("type", "message") == "message":
            content = item.get("content")
            if isinstance(content, list):
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
            answered = sum(1 for i in items[index + 1 :] if i.get("type") == "function_call_output")
            return str(content or ""), answered
    return "", sum(1 for i in items if i.get("type") == "function_call_output")


def handle(request: RecordedRequest, script: Script, signer: Signer) -> Reply:
    body = request.body
    if not isinstance(body, Mapping) or not isinstance(body.get("model"), str):
        return error_reply(400, "Missing required parameter: 'model'.", param="model")
    items = _items(body)
    removed = _check(body, items, signer) if script.strict else []
    question, answered = _turn(items)
    tools = [t for t in body.get("tools") or [] if isinstance(t, Mapping) and t.get("type") == "function"]
    tool = tools[0] if tools and answered < script.max_tool_rounds else None
    reasoning_config: Mapping[str, Any] = body.get("reasoning") or {}
    thought = script.reasoning(thinking_text(question, str(tool.get("name")) if tool else None))
    summary = [{"type": "summary_text", "text": thought}] if reasoning_config.get("summary") else []
    token = signer.opaque(_MAGIC, _DOMAIN, binding(body, items, len(items)), model=str(body["model"]))
    output: list[dict[str, Any]] = [
        {"id": request_id("rs_", body), "type": "reasoning", "summary": summary, "encrypted_content": token}
    ]
    if tool is not None:
        output.append(
            {
                "id": request_id("fc_", body),
                "type": "function_call",
                "call_id": request_id("call_", body),
                "name": str(tool.get("name")),
                "arguments": json.dumps(sample_args(tool.get("parameters"))),
                "status": "completed",
            }
        )
    else:
        text_config = body.get("text")
        fmt = text_config.get("format") if isinstance(text_config, Mapping) else None
        schema = fmt.get("schema") if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema" else None
        text = structured_answer(schema) or answer_text(question, answered > 0)
        output.append(
            {
                "id": request_id("msg_", body),
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
            }
        )
    visible = json.dumps(output[1:])
    usage = {
        "input_tokens": estimate_tokens(json.dumps(items)),
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": estimate_tokens(visible) + estimate_tokens(thought),
        "output_tokens_details": {"reasoning_tokens": estimate_tokens(thought)},
        "total_tokens": estimate_tokens(json.dumps(items)) + estimate_tokens(visible) + estimate_tokens(thought),
    }
    response: dict[str, Any] = {
        "id": request_id("resp_", body),
        "object": "response",
        "created_at": CREATED,
        "completed_at": CREATED + 1,
        "status": "completed",
        "model": body["model"],
        "instructions": body.get("instructions"),
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "reasoning": {"effort": reasoning_config.get("effort"), "summary": reasoning_config.get("summary")},
        "usage": usage,
    }
    if removed:
        response["input_transformations"] = removed
    if body.get("stream"):
        return sse_reply(_stream_frames(response, script))
    return json_reply(response)


def _stream_frames(response: dict[str, Any], script: Script) -> list[bytes]:
    frames: list[bytes] = []

    def event(kind: str, **fields: Any) -> None:
        frames.append(sse_frame({"type": kind, "sequence_number": len(frames), **fields}, kind))

    pending = {**response, "status": "in_progress", "output": [], "usage": None, "completed_at": None}
    event("response.created", response=pending)
    event("response.in_progress", response=pending)
    for index, item in enumerate(response["output"]):
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "reasoning":
            event("response.output_item.added", output_index=index, item={**item, "summary": []})
            for n, part in enumerate(item["summary"]):
                event("response.reasoning_summary_part.added", **at, summary_index=n, part={**part, "text": ""})
                for piece in split_text(part["text"], script.stream_chunks):
                    event("response.reasoning_summary_text.delta", **at, summary_index=n, delta=piece)
                event("response.reasoning_summary_text.done", **at, summary_index=n, text=part["text"])
                event("response.reasoning_summary_part.done", **at, summary_index=n, part=part)
        elif item["type"] == "function_call":
            event(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            event("response.function_call_arguments.delta", **at, delta=item["arguments"])
            event("response.function_call_arguments.done", **at, arguments=item["arguments"], name=item["name"])
        else:
            event(
                "response.output_item.added", output_index=index, item={**item, "content": [], "status": "in_progress"}
            )
            part = item["content"][0]
            event("response.content_part.added", **at, content_index=0, part={**part, "text": ""})
            for piece in split_text(part["text"], 2):
                event("response.output_text.delta", **at, content_index=0, delta=piece, logprobs=[])
            event("response.output_text.done", **at, content_index=0, text=part["text"], logprobs=[])
            event("response.content_part.done", **at, content_index=0, part=part)
        event("response.output_item.done", output_index=index, item=item)
    event("response.completed", response=response)
    return frames
