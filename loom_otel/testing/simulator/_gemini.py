"""The Gemini Developer API (``models/{model}:generateContent`` and ``:streamGenerateContent?alt=sse``)."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any, Final

from ._exchange import RecordedRequest, Reply, estimate_tokens, json_reply, split_text, sse_frame, sse_reply
from ._script import Script, answer_text, request_id, sample_args, structured_answer, thinking_text
from ._signing import Signer, canonical_json, decode_b64

_MAGIC: Final = b"\x0a\x9a\x02"
_DOMAIN: Final = "gemini/thought_signature"
ROUTE: Final = re.compile(r"^/(v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):(?P<method>\w+)$")
_STATUS_NAMES: Final = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def error_reply(status: int, message: str) -> Reply:
    name = _STATUS_NAMES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return json_reply({"error": {"code": status, "message": message, "status": name}}, status)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _get(mapping: Mapping[str, Any], key: str) -> Any:
    """Read a field by its camelCase name or its snake_case spelling (the SDK sends both)."""
    if key in mapping:
        return mapping[key]
    snake = re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()
    return mapping.get(snake)


def _norm(value: Any) -> Any:
    """One spelling for binding: camelCase keys, no ``None``, signatures as standard base64."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if item is None:
                continue
            name = _camel(str(key))
            raw = decode_b64(item) if name == "thoughtSignature" and isinstance(item, str) else None
            out[name] = base64.b64encode(raw).decode() if raw is not None else _norm(item)
        return out
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


def _contents(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    contents = _get(body, "contents")
    if isinstance(contents, Mapping):
        contents = [contents]
    return [dict(c) for c in contents or [] if isinstance(c, Mapping)]


def _role(content: Mapping[str, Any]) -> str:
    return str(content.get("role") or "user")


def _parts(content: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p for p in content.get("parts") or [] if isinstance(p, Mapping)]


def binding(body: Mapping[str, Any], index: int) -> dict[str, Any]:
    """What a model step starting at ``contents[index]`` is bound to (Gemini ignores the model)."""
    prefix = [{**_norm(c), "role": _role(c)} for c in _contents(body)[:index]]
    return {
        "systemInstruction": _norm(_get(body, "systemInstruction")),
        "tools": _norm(_get(body, "tools")) or None,
        "contents": prefix,
    }


def _is_turn_start(content: Mapping[str, Any]) -> bool:
    parts = _parts(content)
    return _role(content) == "user" and any(_get(p, "functionResponse") is None for p in parts)


def _turn_start(contents: list[dict[str, Any]]) -> int:
    for index in range(len(contents) - 1, -1, -1):
        if _is_turn_start(contents[index]):
            return index
    return 0


def _check(body: Mapping[str, Any], signer: Signer) -> str | None:
    """The current-turn rule: each model step's first function call carries a valid signature."""
    contents = _contents(body)
    index = _turn_start(contents) + 1
    while index < len(contents):
        if _role(contents[index]) != "model":
            index += 1
            continue
        bound, seen_call = binding(body, index), False
        while index < len(contents) and _role(contents[index]) == "model":
            for part in _parts(contents[index]):
                signature = _get(part, "thoughtSignature")
                if signature is not None and (
                    not isinstance(signature, str) or signer.check(_MAGIC, _DOMAIN, signature, bound) != "ok"
                ):
                    return "Corrupted thought signature."
                call = _get(part, "functionCall")
                if call is not None and not seen_call:
                    seen_call = True
                    if signature is None:
                        name = call.get("name") if isinstance(call, Mapping) else None
                        return (
                            f"Function call `{name}` in the `{index}.` content block is missing a "
                            "`thought_signature`. Learn more: https://ai.google.dev/gemini-api/docs/thought-signatures"
                        )
            index += 1
    return None


def _declarations(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    for tool in _get(body, "tools") or []:
        if isinstance(tool, Mapping):
            found.extend(d for d in _get(tool, "functionDeclarations") or [] if isinstance(d, Mapping))
    return found


def _schema(declaration: Mapping[str, Any]) -> Any:
    schema = _get(declaration, "parametersJsonSchema")
    return schema if schema is not None else _get(declaration, "parameters")


def _response_schema(body: Mapping[str, Any]) -> object:
    config = _get(body, "generationConfig")
    if not isinstance(config, Mapping):
        return None
    schema = _get(config, "responseJsonSchema")
    return schema if schema is not None else _get(config, "responseSchema")


def _include_thoughts(body: Mapping[str, Any]) -> bool:
    config = _get(body, "generationConfig") or {}
    thinking = _get(config, "thinkingConfig") if isinstance(config, Mapping) else None
    return isinstance(thinking, Mapping) and bool(_get(thinking, "includeThoughts"))


def _question(contents: list[dict[str, Any]]) -> str:
    start = _turn_start(contents)
    if start < len(contents):
        return " ".join(str(p["text"]) for p in _parts(contents[start]) if isinstance(p.get("text"), str))
    return ""


def handle(request: RecordedRequest, model: str, stream: bool, script: Script, signer: Signer) -> Reply:
    body = request.body
    if not isinstance(body, Mapping) or not _contents(body):
        return error_reply(400, "* GenerateContentRequest.contents: contents is not specified")
    if script.strict and (problem := _check(body, signer)) is not None:
        return error_reply(400, problem)
    contents = _contents(body)
    start = _turn_start(contents)
    steps = sum(1 for c in contents[start + 1 :] if any(_get(p, "functionResponse") for p in _parts(c)))
    declarations = _declarations(body) if steps < script.max_tool_rounds else []
    calls = declarations[:2]
    question = _question(contents)
    thought = script.reasoning(thinking_text(question, str(calls[0].get("name")) if calls else None))
    signature = signer.token(_MAGIC, _DOMAIN, binding(body, len(contents)))
    thoughts = split_text(thought, script.stream_chunks if stream else 1) if _include_thoughts(body) else []
    text = structured_answer(_response_schema(body)) or answer_text(question, steps > 0)
    answer = [] if calls else split_text(text, 2 if stream else 1)
    thought_parts = [{"text": t, "thought": True} for t in thoughts]
    call_parts: list[dict[str, Any]] = [
        {"functionCall": {"name": str(d.get("name")), "args": sample_args(_schema(d))}} for d in calls
    ]
    if call_parts:
        call_parts[0]["thoughtSignature"] = signature
    envelope = {
        "modelVersion": model,
        "responseId": request_id("", body)[:22],
        "usageMetadata": _usage(body, thought, answer, call_parts),
    }
    if not stream:
        parts = thought_parts + call_parts + [{"text": t} for t in answer]
        if not call_parts:
            parts[-1]["thoughtSignature"] = signature
        return json_reply({"candidates": [_candidate(parts, final=True)], **envelope})
    frames = [[p] for p in thought_parts] + [[{"text": t}] for t in answer]
    frames.append(call_parts or [{"text": "", "thoughtSignature": signature}])
    return sse_reply(
        [
            sse_frame({"candidates": [_candidate(f, final=n == len(frames) - 1)], **envelope}, newline="\r\n")
            for n, f in enumerate(frames)
        ]
    )


def _candidate(parts: list[dict[str, Any]], *, final: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if final:
        candidate["finishReason"] = "STOP"
    return candidate


def _usage(body: Mapping[str, Any], thought: str, answer: list[str], calls: list[Any]) -> dict[str, Any]:
    prompt = estimate_tokens(canonical_json(_get(body, "contents")).decode(errors="replace"))
    output = estimate_tokens("".join(answer) + canonical_json(calls).decode(errors="replace"))
    thoughts = estimate_tokens(thought)
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
        "thoughtsTokenCount": thoughts,
    }
