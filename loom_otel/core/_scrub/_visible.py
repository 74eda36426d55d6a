"""What one model call sent or returned visibly: the request's messages (tool results included), the
answer's text and its tool calls' arguments. None of it is a secret: a thought that restates the user's
prompt, quotes a tool's output or plans the answer shares long runs with it, and those runs are not
searched for (``_registry``), so the conversation around a thought is exported intact.

The texts are read from the request the application passed (any SDK's: mappings, sequences and pydantic
models) and from the answer in the conventions' message shape, leaving out every reasoning part
(``is_reasoning_part``, which ``_shapes`` reads too) and signature field; at most ``MAX_VISIBLE`` bytes
of skeleton per call are kept, beyond which the rest counts as not visible (more is removed, never less).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from loom_otel.core._scrub._windows import skeleton

__all__ = ["MAX_VISIBLE", "REASONING_KEYS", "is_reasoning_part", "shown", "visible_skeleton"]

MAX_VISIBLE: Final = 1 << 20
"""The most skeleton bytes of one call's visible text considered (1 MiB)."""
_MAX_DEPTH: Final = 24
_MAX_CHARS: Final = 4 * MAX_VISIBLE
"""The most characters of visible text collected (more than ``MAX_VISIBLE`` skeleton bytes' worth of
ordinary text; beyond it, the rest counts as not visible: more is removed, never less)."""
_PART_TYPES: Final = frozenset({"reasoning", "thinking", "redacted_thinking"})
REASONING_KEYS: Final = frozenset(
    {
        "signature",
        "thought_signature",
        "thoughtSignature",
        "reasoning_signature",
        "encrypted_content",
        "reasoning_content",
        "reasoning",
    }
)
"""Keys whose value is a reasoning text or signature (or a request's reasoning settings) wherever they
stand: never visible text."""


def is_reasoning_part(node: Mapping[str, Any]) -> bool:
    """Whether a JSON object (or a model's fields) is a reasoning part: ``thinking``, ``reasoning`` or
    ``redacted_thinking`` typed, or a Gemini part with ``thought`` set."""
    return node.get("type") in _PART_TYPES or node.get("thought") is True


def shown(sources: object) -> object:
    """``sources`` as the call showed them, for later reading: the lists a mapping (the request's keyword
    arguments) or a tuple of them holds are copied (one level, C-level), so a conversation appended to
    after the call is read as it was sent."""
    if isinstance(sources, tuple):
        return tuple([shown(source) for source in sources])
    if isinstance(sources, Mapping):
        return {key: list(value) if isinstance(value, list) else value for key, value in sources.items()}
    return sources


def visible_skeleton(*sources: object) -> bytes:
    """The skeleton of every visible text in ``sources`` (a request's keyword arguments, the answer's
    messages), joined, at most ``MAX_VISIBLE`` bytes (texts are collected up to ``_MAX_CHARS``
    characters, then made a skeleton at once)."""
    texts: list[str] = []
    _collect(sources, texts, [_MAX_CHARS], 0)
    return skeleton("".join(texts).encode("utf-8", "surrogatepass"))[:MAX_VISIBLE]


def _collect(value: Any, texts: list[str], budget: list[int], depth: int) -> None:
    kind = type(value)
    if value is None or kind is int or kind is float or kind is bool or budget[0] <= 0 or depth > _MAX_DEPTH:
        return
    if isinstance(value, str):
        if value:
            texts.append(value)
            budget[0] -= len(value)
        return
    if isinstance(value, Mapping):
        if is_reasoning_part(value):
            return
        for key, item in value.items():
            if item is not None and key not in REASONING_KEYS:  # a field left unset is not sent
                _collect(key, texts, budget, depth + 1)
                _collect(item, texts, budget, depth + 1)
        return
    if isinstance(value, list | tuple):
        for item in value:
            _collect(item, texts, budget, depth + 1)
        return
    fields = getattr(kind, "model_fields", None)  # a pydantic model (the SDKs' request and answer types)
    if isinstance(fields, Mapping):
        given = getattr(value, "model_fields_set", None)  # the fields set, in order (the others are not sent)
        names = [name for name in fields if name in given] if isinstance(given, set) else fields
        _collect({name: getattr(value, name, None) for name in names}, texts, budget, depth)
