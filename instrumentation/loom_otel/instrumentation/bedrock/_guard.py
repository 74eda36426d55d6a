"""The Bedrock Converse side of the request guard: which ``converse`` fields are instructions, and where
a ``reasoningContent`` block may sit (``core/_guard/_requests`` holds the scanner and the rule)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from loom_otel.core.vendor_helpers import check, check_rest, field, reasoning_block

__all__ = ["check_converse_request"]

_VENDOR: Final = "Bedrock Converse"
_HANDLED: Final = frozenset({"messages"})
_INSTRUCTIONS: Final = frozenset({"system", "toolConfig", "promptVariables", "additionalModelRequestFields"})


def check_converse_request(kwargs: Mapping[str, Any]) -> None:
    """Check ``converse`` / ``converse_stream`` parameters (``system``, ``toolConfig``, ``messages``, ...)."""
    check_rest(_VENDOR, kwargs, _HANDLED, _INSTRUCTIONS, [])
    for i, message in enumerate(kwargs.get("messages") or ()):
        role = field(message, "role")
        content = field(message, "content")
        if isinstance(content, (list, tuple)) and role != "assistant":
            for j, block in enumerate(content):
                if isinstance(block, Mapping) and "reasoningContent" in block:
                    raise reasoning_block(_VENDOR, "reasoningContent", role, ["messages", i, "content", j])
        check(_VENDOR, message, ["messages", i], allow_fenced=role == "user", instruction=False)
