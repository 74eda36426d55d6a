"""Message content capture (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``), reasoning by reference.

``NO_CONTENT`` (the default) records no content. ``SPAN_ONLY`` puts ``gen_ai.system_instructions``,
``gen_ai.input.messages``, ``gen_ai.output.messages`` and ``gen_ai.tool.definitions`` on the model-call
span as JSON strings in the conventions' shape; ``EVENT_ONLY`` puts the same attributes on one
``gen_ai.client.inference.operation.details`` span event instead; ``SPAN_AND_EVENT`` does both. The
legacy ``true`` / ``false`` mean ``SPAN_ONLY`` / ``NO_CONTENT``.

Every reasoning part is ``{"type": "reasoning", "content": <marker>, "ref", "digest", "size"}``: the
reference, digest and size loom-otel captured (``content`` is the same reference as text, for viewers
that show only ``content``; with ``LOOM_OTEL_VIEWER_URL``, a markdown link to the call's page in the viewer,
also given as ``url``), or the removal marker where loom-otel kept none. Never a text, never a
signature. Vendor packages build the messages with the part builders below; the reasoning parts of
the answer are added by ``ModelCall.record_content`` from the capture, first in the first output message.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Final

from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._evidence._attributes import AttributeValue
from loom_otel.core._evidence._model import ReasoningPart
from loom_otel.core._runtime._shapes import field
from loom_otel.core._scrub import REMOVED, marker, reference_of

__all__ = [
    "CONTENT_EVENT",
    "ENV",
    "attach_request",
    "content_mode",
    "content_part",
    "in_event",
    "on_span",
    "output_content",
    "output_reasoning",
    "reasoning_input_part",
    "request_content",
    "serialize",
    "text_part",
    "tool_call_part",
    "tool_response_part",
]

ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CONTENT_EVENT: Final = "gen_ai.client.inference.operation.details"
_MODES: Final = {
    "NO_CONTENT": "NO_CONTENT",
    "SPAN_ONLY": "SPAN_ONLY",
    "EVENT_ONLY": "EVENT_ONLY",
    "SPAN_AND_EVENT": "SPAN_AND_EVENT",
    "TRUE": "SPAN_ONLY",
    "FALSE": "NO_CONTENT",
}
_REASONING_PARTS: Final = frozenset({"reasoning", "thinking", "redacted_thinking", "reasoning_text"})
"""Types of a message content part that hold reasoning (a Chat assistant's ``{"type": "reasoning",
"text": ...}``, as OpenAI-compatible servers and agent frameworks write it)."""
_REASONING_TEXTS: Final = ("text", "thinking", "content", "reasoning", "reasoning_content")
_REASONING_SECRETS: Final = ("signature", "encrypted_content", "data")
_warned: set[str] = set()


def content_mode() -> str:
    """The content mode the environment sets (an unknown value warns once and records no content)."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return "NO_CONTENT"
    mode = _MODES.get(raw.upper())
    if mode is None:
        if raw not in _warned:
            _warned.add(raw)
            warnings.warn(
                f"{ENV}={raw!r} is not one of NO_CONTENT, SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT: no content recorded",
                stacklevel=2,
            )
        return "NO_CONTENT"
    return mode


def on_span(mode: str) -> bool:
    return mode in ("SPAN_ONLY", "SPAN_AND_EVENT")


def in_event(mode: str) -> bool:
    return mode in ("EVENT_ONLY", "SPAN_AND_EVENT")


def serialize(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def tool_call_part(call_id: object, name: object, arguments: object) -> dict[str, Any]:
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    part: dict[str, Any] = {"type": "tool_call", "name": str(name or "")}
    if call_id:
        part["id"] = str(call_id)
    part["arguments"] = arguments
    return part


def tool_response_part(call_id: object, response: object) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool_call_response"}
    if call_id:
        part["id"] = str(call_id)
    part["response"] = response
    return part


def _reference_part(replacement: str, ref: str | None, digest: str | None, size: int) -> dict[str, Any]:
    found: dict[str, Any] = {"type": "reasoning", "content": replacement}
    if ref:
        found.update(ref=ref, digest=digest, size=size)
    else:
        found["size"] = size
    return found


def reasoning_input_part(text: object, signature: object) -> dict[str, Any]:
    """A reasoning block sent back in a request: loom-otel's reference when it captured it, else removed."""
    for value in (text, signature):
        secret = base64.b64encode(value).decode() if isinstance(value, bytes) else value
        if isinstance(secret, str) and secret:
            found = reference_of(secret)
            if found is not None:
                return _reference_part(*found)
    return {"type": "reasoning", "content": REMOVED}


def content_part(part: object) -> dict[str, Any]:
    """One part of a message's content list: a reasoning part as its reference (``reasoning_input_part``),
    a text part as its text, anything else as its kind."""
    kind = field(part, "type")
    if kind in _REASONING_PARTS:
        texts = (field(part, name) for name in _REASONING_TEXTS)
        secrets = (field(part, name) for name in _REASONING_SECRETS)
        text = next((v for v in texts if isinstance(v, str) and v), None)
        return reasoning_input_part(text, next((v for v in secrets if isinstance(v, str | bytes) and v), None))
    text = field(part, "text")
    return text_part(text) if isinstance(text, str) else {"type": str(kind or "unknown")}


def output_reasoning(parts: Sequence[ReasoningPart], count: int, url: object = None) -> list[dict[str, Any]]:
    """The answer's reasoning parts: the capture's (``parts``), else ``count`` removed ones. With the
    call's ``loom.reasoning.url`` (``url``), each captured part's ``content`` is a markdown link to it
    (``[<marker>](<url>)``: a backend that renders messages as markdown, Arize Phoenix, makes it a link)
    and the part holds it as ``url``."""
    if parts:
        found = []
        for p in parts:
            text = marker(p.text_ref, p.digest, p.size, "text")
            linked = isinstance(url, str) and url and p.text_ref
            found.append(_reference_part(f"{text}({url})" if linked else text, p.text_ref, p.digest, p.size))
            if linked:
                found[-1]["url"] = url
        return found
    return [{"type": "reasoning", "content": REMOVED} for _ in range(count)]


def request_content(
    system: Sequence[Mapping[str, Any]] | None,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
) -> dict[str, AttributeValue]:
    """The request side as attributes (JSON strings); empty parts are left out."""
    found: dict[str, AttributeValue] = {attr.GEN_AI_INPUT_MESSAGES: serialize(list(messages))}
    if system:
        found[attr.GEN_AI_SYSTEM_INSTRUCTIONS] = serialize(list(system))
    if tools:
        found[attr.GEN_AI_TOOL_DEFINITIONS] = serialize(list(tools))
    return found


def output_content(
    messages: Sequence[Mapping[str, Any]], reasoning: Sequence[Mapping[str, Any]]
) -> dict[str, AttributeValue]:
    """The answer as the ``gen_ai.output.messages`` attribute, the reasoning parts first in the first message."""
    out = [dict(m) for m in messages] or [{"role": "assistant", "parts": []}]
    if reasoning:
        out[0]["parts"] = [*reasoning, *out[0].get("parts", ())]
    return {attr.GEN_AI_OUTPUT_MESSAGES: serialize(out)}


def attach_request(
    mode: str,
    *,
    system: Sequence[Mapping[str, Any]] | None,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    attributes: dict[str, AttributeValue],
    hints: dict[str, object],
) -> None:
    """Put the request side where ``mode`` says: span attributes at start, and/or the hints the ending
    event reads; ``hints["content_mode"]`` tells ``ModelCall.record_content`` to record the answer."""
    content = request_content(system, messages, tools)
    hints["content_mode"] = mode
    if on_span(mode):
        attributes.update(content)
    if in_event(mode):
        hints["content"] = content
