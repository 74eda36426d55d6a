"""The Anthropic agent loop the continuation tests drive: requests, how an application keeps responses,
one turn with a tool round."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.anthropic.modes import MODES as ALL_MODES
from tests.support.anthropic_sdk import assistant_turn
from tests.support.tools import WEATHER

MODES = {
    name: ALL_MODES[name]
    for name in ("sync", "async", "stream", "async_stream", "messages.stream", "async_messages.stream")
}

CANARY = "CANARY-continuation-5d1e"
MODEL = "claude-sonnet-5-5"
SYSTEM = "You are a careful travel assistant."
QUESTION = "Should I pack an umbrella for Lyon tomorrow?"
NEXT = "And what about Paris?"
DROPPED = "loom.reasoning.dropped"
RESTORED = "loom.reasoning.restored"


def base(**overrides: Any) -> dict[str, Any]:
    kw: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 4096,
        "thinking": {"type": "adaptive", "display": "summarized"},
        "system": SYSTEM,
        "tools": [WEATHER],
    }
    kw.update(overrides)
    return kw


def assistant(message: Any, mode: str) -> dict[str, Any]:
    """How an application keeps a response: ``to_param()`` (pydantic blocks) or plain dicts."""
    if mode in ("sync", "async", "messages.stream"):
        return assistant_turn(message)
    return {"role": "assistant", "content": [b.model_dump() for b in message.content]}


def tool_result(message: Any) -> dict[str, Any]:
    call = next(b for b in message.content if b.type == "tool_use")
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "Rain, 14C."}]}


def run_loop(send: Callable[[dict[str, Any]], Any], mode: str) -> tuple[list[dict[str, Any]], list[Any]]:
    """One agent turn with a tool round: user, assistant(tool_use), user(tool_result), assistant(answer)."""
    history: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    responses = []
    while True:
        message = send(base(messages=list(history)))
        responses.append(message)
        history.append(assistant(message, mode))
        if message.stop_reason != "tool_use":
            return history, responses
        history.append(tool_result(message))


def next_turn(history: list[dict[str, Any]], **overrides: Any) -> dict[str, Any]:
    return base(messages=[*history, {"role": "user", "content": NEXT}], **overrides)
