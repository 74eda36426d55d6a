"""The Gemini side of the request guard: which ``generate_content`` config fields are instructions, and where
a thought part may sit (``core/_guard/_requests`` holds the scanner and the rule).

``check_gemini_request(contents, config)``: ``models.generate_content`` (and ``_stream``).
"""

from __future__ import annotations

from typing import Final

from loom_otel.core.vendor_helpers import (
    DATA_ROLES,
    GuardPath,
    check,
    field,
    is_mapping,
    model_fields,
    present,
    reasoning_block,
)

__all__ = ["check_gemini_request"]

_GEMINI: Final = "Google GenAI"


def _is_content(value: object) -> bool:
    """A ``Content`` (or its dict form), as opposed to a bare ``Part`` or string the SDK makes a user turn."""
    if is_mapping(value):
        return "parts" in value or "role" in value
    return hasattr(value, "parts") and hasattr(value, "role")


def _gemini_contents(contents: object, path: GuardPath) -> None:
    """Fenced text only in user contents; ``Untrusted`` nowhere; thought parts only in model contents."""
    if isinstance(contents, (list, tuple)):
        for i, item in enumerate(contents):
            _gemini_contents(item, [*path, i])
        return
    if _is_content(contents):
        role = field(contents, "role") or "user"
        if role != "model":
            for j, part in enumerate(field(contents, "parts") or ()):
                if field(part, "thought") is True:
                    raise reasoning_block(_GEMINI, "thought", role, [*path, "parts", j])
    else:
        role = "user"
        if field(contents, "thought") is True:
            raise reasoning_block(_GEMINI, "thought", role, path)
    check(_GEMINI, contents, path, allow_fenced=role in DATA_ROLES, instruction=False)


_GEMINI_INSTRUCTIONS: Final = frozenset({"system_instruction", "tools", "tool_config", "response_schema"})


def check_gemini_request(contents: object, config: object = None) -> None:
    """Check ``generate_content(contents=..., config=...)``: ``contents`` may be a string, a ``Part``, a
    ``Content``, a dict, or a list of them; ``config`` a ``GenerateContentConfig`` or a dict."""
    _gemini_contents(contents, ["contents"])
    if config is None:
        return
    fields = config if is_mapping(config) else model_fields(config)
    if fields is None:
        check(_GEMINI, config, ["config"], allow_fenced=False, instruction=True)
        return
    for key, value in present(fields):  # a config sets a few of its fifty fields
        check(_GEMINI, value, ["config", key], allow_fenced=False, instruction=key in _GEMINI_INSTRUCTIONS)
