"""The Anthropic side of the request guard: which ``messages.create`` fields are instructions, and where a
reasoning block may sit (``core/_guard/_requests`` holds the scanner and the rule).

- ``check_anthropic_request(kwargs)``: ``messages.create`` / ``stream`` keyword arguments;
- ``check_anthropic_batch_request(kwargs)``: ``messages.batches.create``, each ``requests[i].params``
  checked as a ``messages.create`` request (positions ``requests[3].params.system[0].text``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from loom_otel.core.vendor_helpers import GuardPath, check, check_rest, field, is_mapping, model_fields, reasoning_block

__all__ = ["check_anthropic_batch_request", "check_anthropic_request"]

_REASONING: Final = frozenset({"thinking", "redacted_thinking"})
_ANTHROPIC: Final = "Anthropic"
_ANTHROPIC_HANDLED: Final = frozenset({"messages"})
_ANTHROPIC_INSTRUCTIONS: Final = frozenset({"system", "tools", "tool_choice", "output_format", "mcp_servers"})


def check_anthropic_request(kwargs: Mapping[str, Any]) -> None:
    """Check ``messages.create`` keyword arguments (``system``, ``tools``, ``messages``, ...)."""
    _check_anthropic(_ANTHROPIC, kwargs, [])


def _check_anthropic(vendor: str, kwargs: Mapping[str, Any], path: GuardPath) -> None:
    check_rest(vendor, kwargs, _ANTHROPIC_HANDLED, _ANTHROPIC_INSTRUCTIONS, path)
    for i, message in enumerate(kwargs.get("messages") or ()):
        role = field(message, "role")
        user = role == "user"
        content = field(message, "content")
        if isinstance(content, (list, tuple)) and role != "assistant":
            for j, block in enumerate(content):
                kind = field(block, "type")
                if kind in _REASONING:
                    raise reasoning_block(vendor, str(kind), role, [*path, "messages", i, "content", j])
        check(vendor, message, [*path, "messages", i], allow_fenced=user, instruction=False)


_ANTHROPIC_BATCH: Final = "Anthropic batch"


def check_anthropic_batch_request(kwargs: Mapping[str, Any]) -> None:
    """Check ``messages.batches.create`` keyword arguments: every ``requests[i].params`` as a
    ``messages.create`` request, every other field (``custom_id``, headers) as data that may not
    hold the fence. ``requests`` must be a list or tuple (the caller materialises a one-shot iterable
    before checking, or the check would consume what the SDK is to send)."""
    check_rest(_ANTHROPIC_BATCH, kwargs, frozenset({"requests"}), frozenset())
    requests = kwargs.get("requests") or ()
    if not isinstance(requests, (list, tuple)):
        check(_ANTHROPIC_BATCH, requests, ["requests"], allow_fenced=False, instruction=False)
        return
    for i, request in enumerate(requests):
        params = field(request, "params")
        fields = request if is_mapping(request) else model_fields(request)
        if fields is None or params is None:
            check(_ANTHROPIC_BATCH, request, ["requests", i], allow_fenced=False, instruction=False)
            continue
        check_rest(_ANTHROPIC_BATCH, fields, frozenset({"params"}), frozenset(), ["requests", i])
        params_fields = params if is_mapping(params) else model_fields(params)
        if params_fields is not None:
            _check_anthropic(_ANTHROPIC_BATCH, params_fields, ["requests", i, "params"])
        else:
            check(_ANTHROPIC_BATCH, params, ["requests", i, "params"], allow_fenced=False, instruction=True)
