"""OpenAI-compatible Chat Completions (``POST /v1/chat/completions``) with DeepSeek/vLLM reasoning."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from ._exchange import RecordedRequest, Reply, estimate_tokens, json_reply, split_text, sse_frame, sse_reply
from ._script import Script, answer_text, request_id, sample_args, structured_answer, thinking_text

CREATED: Final = 1_767_225_600
_ERROR_TYPES: Final = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}


def error_reply(status: int, message: str, *, param: str | None = None, code: str | None = None) -> Reply:
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return json_reply({"error": {"message": message, "type": kind, "param": param, "code": code}}, status)


def _messages(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [m for m in body.get("messages") or [] if isinstance(m, Mapping)]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def _turn(messages: list[Mapping[str, Any]]) -> tuple[str, int, int]:
    """The last user question, the index where the turn starts and the tool answers since then."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            answered = sum(1 for m in messages[index + 1 :] if m.get("role") == "tool")
            return _text(messages[index].get("content")), index, answered
    return "", 0, sum(1 for m in messages if m.get("role") == "tool")


def _check(messages: list[Mapping[str, Any]], start: int, field: str) -> str | None:
    """DeepSeek's rule: assistant tool-call turns of the current turn must send their reasoning back."""
    for index, message in enumerate(messages[start:], start):
        if message.get("role") == "assistant" and message.get("tool_calls") and message.get(field) is None:
            return (
                f"Missing `{field}` field in the assistant message at message index {index}. For more "
                "information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
            )
    return None


def handle(request: RecordedRequest, script: Script) -> Reply:
    body = request.body
    if not isinstance(body, Mapping) or not _messages(body) or not isinstance(body.get("model"), str):
        return error_reply(400, "'messages' and 'model' are required properties")
    messages = _messages(body)
    question, start, answered = _turn(messages)
    field = script.reasoning_field
    if script.strict and field == "reasoning_content" and (problem := _check(messages, start, field)):
        return error_reply(400, problem)
    tools = [t.get("function") for t in body.get("tools") or [] if isinstance(t, Mapping)]
    functions = [f for f in tools if isinstance(f, Mapping)]
    tool = functions[0] if functions and answered < script.max_tool_rounds else None
    reasoning = script.reasoning(thinking_text(question, str(tool.get("name")) if tool else None))
    calls: list[dict[str, Any]] = []
    if tool is not None:
        arguments = json.dumps(sample_args(tool.get("parameters")))
        calls.append(
            {
                "id": request_id("call_", body),
                "type": "function",
                "function": {"name": str(tool.get("name")), "arguments": arguments},
            }
        )
    fmt = body.get("response_format")
    schema = fmt.get("json_schema") if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema" else None
    structured = structured_answer(schema.get("schema") if isinstance(schema, Mapping) else None)
    content = None if calls else structured or answer_text(question, answered > 0)
    visible = (content or "") + json.dumps(calls)
    usage = {
        "prompt_tokens": estimate_tokens(json.dumps(messages)),
        "completion_tokens": estimate_tokens(visible) + estimate_tokens(reasoning),
        "total_tokens": estimate_tokens(json.dumps(messages)) + estimate_tokens(visible + reasoning),
        "completion_tokens_details": {"reasoning_tokens": estimate_tokens(reasoning)},
    }
    head = {"id": request_id("chatcmpl-", body), "created": CREATED, "model": body["model"]}
    finish = "tool_calls" if calls else "stop"
    if not body.get("stream"):
        message: dict[str, Any] = {"role": "assistant", "content": content, field: reasoning}
        if calls:
            message["tool_calls"] = calls
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        return json_reply({**head, "object": "chat.completion", "choices": [choice], "usage": usage})

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return sse_frame({**head, "object": "chat.completion.chunk", "choices": [choice]})

    frames = [chunk({"role": "assistant", "content": ""})]
    frames += [chunk({field: piece}) for piece in split_text(reasoning, script.stream_chunks)]
    frames += [chunk({"content": piece}) for piece in split_text(content or "", 2)]
    for index, call in enumerate(calls):
        opening = {**call, "index": index, "function": {**call["function"], "arguments": ""}}
        frames.append(chunk({"tool_calls": [opening]}))
        frames.append(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": call["function"]["arguments"]}}]})
        )
    frames.append(chunk({}, finish))
    options = body.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage"):
        frames.append(sse_frame({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage}))
    frames.append(sse_frame("[DONE]"))
    return sse_reply(frames)
