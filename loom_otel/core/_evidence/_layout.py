"""The response's layout (DESIGN "Capture", ``loom.reasoning.layout``): its reasoning parts, text blocks
and tool calls in vendor order, so an auditor can prove which reasoning preceded which action.

The attribute is a string array, one canonical JSON object per entry:

- ``{"part":N,"type":"reasoning"}``: reasoning part ``N`` of the same record (``loom.reasoning.part.*``);
- ``{"type":"text"}``: an answer text block (never its text);
- ``{"arguments_sha256":H,"id":I,"name":F,"type":"tool_call"}``: a tool call, ``H`` the SHA-256 of its
  canonical arguments (never the arguments).

Every vendor builds it with ``LayoutBuilder``, for complete and streamed responses alike, so both give
equal layouts. Consecutive text pieces are one entry (a stream splits a text block into chunks).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from loom_otel.core._evidence._canonical import canonical_json, sha256_hex, text_bytes

__all__ = ["REASONING", "TEXT", "TOOL_CALL", "LayoutBuilder", "arguments_digest", "describe", "parse_layout"]

REASONING: Final = "reasoning"
TEXT: Final = "text"
TOOL_CALL: Final = "tool_call"
_TEXT_ENTRY: Final = canonical_json({"type": TEXT}).decode()


def _plain(value: object) -> object:
    """A JSON value of an SDK object (pydantic models dump, mappings and sequences recurse)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _plain(dump(mode="json", exclude_none=True))
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def arguments_digest(arguments: object) -> str:
    """SHA-256 hex of a tool call's canonical arguments: a JSON string is parsed first (a streamed call's
    joined deltas equal the complete call's object); a string that is not JSON is hashed as it is; no
    arguments are ``{}``."""
    value: object = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else None
        except ValueError:
            return sha256_hex(text_bytes(arguments))
    return sha256_hex(canonical_json({} if value is None else _plain(value)))


class LayoutBuilder:
    """Entries in vendor order; ``reasoning()`` numbers the parts as the vendor mapping creates them."""

    __slots__ = ("_entries", "_parts")

    def __init__(self) -> None:
        self._entries: list[str] = []
        self._parts = 0

    def reasoning(self, part: int | None = None) -> None:
        """The next reasoning part (or part ``part``, where the mapping numbers them itself)."""
        number = self._parts if part is None else part
        self._parts = max(self._parts, number + 1)
        self._entries.append(canonical_json({"part": number, "type": REASONING}).decode())

    def text(self) -> None:
        if not self._entries or self._entries[-1] != _TEXT_ENTRY:
            self._entries.append(_TEXT_ENTRY)

    def tool_call(self, call_id: object, name: object, arguments: object) -> None:
        entry = {
            "arguments_sha256": arguments_digest(arguments),
            "id": "" if call_id is None else str(call_id),
            "name": "" if name is None else str(name),
            "type": TOOL_CALL,
        }
        self._entries.append(canonical_json(entry).decode())

    def entries(self) -> tuple[str, ...]:
        return tuple(self._entries)


def parse_layout(values: Sequence[object]) -> list[dict[str, Any]]:
    """The entries of a recorded layout; an entry that is not a JSON object is ``{"type": "unknown"}``."""
    found: list[dict[str, Any]] = []
    for value in values:
        try:
            entry = json.loads(str(value))
        except ValueError:
            entry = None
        found.append(entry if isinstance(entry, dict) else {"type": "unknown"})
    return found


def describe(values: Sequence[object]) -> str:
    """One line an auditor reads: ``thought, then called get_weather(#a1b2)`` (the ``#`` is the first
    four hex digits of the call's arguments digest)."""
    words: list[str] = []
    for entry in parse_layout(values):
        kind = entry.get("type")
        if kind == REASONING:
            word = "thought"
        elif kind == TEXT:
            word = "answered"
        elif kind == TOOL_CALL:
            word = f"called {entry.get('name') or '?'}(#{str(entry.get('arguments_sha256') or '')[:4]})"
        else:
            word = str(kind)
        if not words or words[-1] != word:
            words.append(word)
    return ", then ".join(words)
