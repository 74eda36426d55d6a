"""The OpenAI side of the request guard: which Chat Completions and Responses fields and roles are
instructions, and where ``reasoning_content`` may sit (``core/_guard/_requests`` holds the scanner and the rule).

- ``check_openai_chat_request(kwargs)``: ``chat.completions.create``;
- ``check_openai_responses_request(kwargs)``: ``responses.create``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from loom_otel.core.vendor_helpers import DATA_ROLES, GuardPath, check, check_rest, field, reasoning_block

__all__ = ["check_openai_chat_request", "check_openai_responses_request"]

_OPENAI_CHAT: Final = "OpenAI chat"
_OPENAI_RESPONSES: Final = "OpenAI responses"
_INSTRUCTION_ROLES: Final = frozenset({"system", "developer"})


def _openai_messages(vendor: str, messages: object, path: GuardPath) -> None:
    if not isinstance(messages, (list, tuple)):
        check(vendor, messages, path, allow_fenced=True, instruction=False)  # a plain user input
        return
    for i, message in enumerate(messages):
        role = field(message, "role")
        if role is not None and role != "assistant" and field(message, "reasoning_content"):
            raise reasoning_block(vendor, "reasoning_content", role, [*path, i, "reasoning_content"])
        if role is None:  # a Responses item: function_call_output is tool data; others are the model's
            data = field(message, "type") in ("function_call_output", "custom_tool_call_output")
            check(vendor, message, [*path, i], allow_fenced=data, instruction=False)
            continue
        instruction = role in _INSTRUCTION_ROLES
        check(vendor, message, [*path, i], allow_fenced=role in DATA_ROLES, instruction=instruction)


_CHAT_INSTRUCTIONS: Final = frozenset({"tools", "functions", "tool_choice", "response_format", "prediction"})


def check_openai_chat_request(kwargs: Mapping[str, Any]) -> None:
    """Check ``chat.completions.create`` keyword arguments (system/developer messages, tool descriptions)."""
    check_rest(_OPENAI_CHAT, kwargs, frozenset({"messages"}), _CHAT_INSTRUCTIONS)
    _openai_messages(_OPENAI_CHAT, kwargs.get("messages") or (), ["messages"])


_RESPONSES_INSTRUCTIONS: Final = frozenset({"instructions", "tools", "tool_choice", "text", "prompt"})


def check_openai_responses_request(kwargs: Mapping[str, Any]) -> None:
    """Check ``responses.create`` keyword arguments (``instructions``, ``input`` items, tools, prompt)."""
    check_rest(_OPENAI_RESPONSES, kwargs, frozenset({"input"}), _RESPONSES_INSTRUCTIONS)
    _openai_messages(_OPENAI_RESPONSES, kwargs.get("input") or (), ["input"])
