"""What the simulated model says: the options shared by every vendor and the deterministic texts."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ._signing import canonical_json, utf8

_FILLER: Final = " Checking the next detail of the request carefully before answering."


@dataclass(frozen=True, slots=True)
class Script:
    """The simulator's behaviour options (see ``Simulator``)."""

    strict: bool = True
    reasoning_text: str | None = None
    thinking_size: int | None = None
    stream_chunks: int = 5
    max_tool_rounds: int = 1
    redacted: bool = False
    interleaved: bool = False
    reasoning_field: str = "reasoning_content"

    def reasoning(self, default: str) -> str:
        """The readable reasoning: ``reasoning_text`` or ``default``, padded to about ``thinking_size``."""
        text = self.reasoning_text if self.reasoning_text is not None else default
        size = self.thinking_size
        if size is None or len(utf8(text)) >= size:
            return text
        missing = size - len(utf8(text))
        padding = (_FILLER * (missing // len(_FILLER) + 1))[:missing]
        return text + padding


def request_id(prefix: str, body: object, salt: str = "") -> str:
    """A deterministic id: the same request always gets the same id."""
    digest = hashlib.sha256(canonical_json(body) + salt.encode()).hexdigest()
    return f"{prefix}{digest[:24]}"


def sample_args(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Fixed arguments that satisfy a JSON (or Gemini ``Schema``) object schema."""
    if not isinstance(schema, Mapping):
        return {}
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    return {str(name): sample_value(str(name), prop) for name, prop in properties.items()}


def sample_value(name: str, schema: object) -> Any:
    if not isinstance(schema, Mapping):
        return f"sim-{name}"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "string")
    if kind is None:
        options = schema.get("anyOf") or schema.get("any_of")
        if isinstance(options, list) and options:
            return sample_value(name, options[0])
    kind = str(kind or "string").lower()
    values: dict[str, Any] = {"integer": 1, "number": 1.5, "boolean": True, "null": None}
    if kind in values:
        return values[kind]
    if kind == "array":
        return [sample_value(name, schema.get("items"))]
    if kind == "object":
        return sample_args(schema)
    return f"sim-{name}"


def structured_answer(schema: object) -> str | None:
    """The JSON answer for a structured-output request (``None`` without a schema)."""
    if not isinstance(schema, Mapping):
        return None
    return json.dumps(sample_args(schema))


def answer_text(question: str, after_tools: bool) -> str:
    topic = " ".join(question.split())[:80] or "your request"
    if after_tools:
        return f"Based on the tool results, here is the answer to: {topic}"
    return f"Here is the answer to: {topic}"


def thinking_text(question: str, tool: str | None) -> str:
    topic = " ".join(question.split())[:80] or "the request"
    if tool is not None:
        return f"The user asks: {topic}. I don't have that data, so I should call {tool} first."
    return f"The user asks: {topic}. I will work through it step by step, then answer."
