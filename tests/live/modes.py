"""Every streaming way of calling an SDK, written once: each mode sends one request and returns the
answer text deltas the application read and the final message (or response) it ends up with."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loom_otel.testing.simulator import Simulator


@dataclass
class Streamed:
    text_deltas: list[str]
    thinking: str
    answer: str


Mode = Callable[[Simulator, dict[str, Any]], Streamed]


def _from_events(events: list[Any]) -> Streamed:
    text, thinking = [], []
    for event in events:
        delta = getattr(event, "delta", None)
        if event.type == "content_block_delta" and delta.type == "text_delta":
            text.append(delta.text)
        elif event.type == "content_block_delta" and delta.type == "thinking_delta":
            thinking.append(delta.thinking)
    return Streamed(text, "".join(thinking), "".join(text))


def _from_message(text: list[str], message: Any) -> Streamed:
    thinking = "".join(b.thinking for b in message.content if b.type == "thinking")
    answer = "".join(b.text for b in message.content if b.type == "text")
    return Streamed(text, thinking, answer)


def anthropic_stream(sim: Simulator, kw: dict[str, Any]) -> Streamed:
    with sim.anthropic_client().messages.create(stream=True, **kw) as stream:
        return _from_events(list(stream))


def anthropic_async_stream(sim: Simulator, kw: dict[str, Any]) -> Streamed:
    async def go() -> Streamed:
        stream = await sim.async_anthropic_client().messages.create(stream=True, **kw)
        return _from_events([event async for event in stream])

    return asyncio.run(go())


def anthropic_helper(sim: Simulator, kw: dict[str, Any]) -> Streamed:
    with sim.anthropic_client().messages.stream(**kw) as stream:
        text = list(stream.text_stream)
        return _from_message(text, stream.get_final_message())


def anthropic_async_helper(sim: Simulator, kw: dict[str, Any]) -> Streamed:
    async def go() -> Streamed:
        async with sim.async_anthropic_client().messages.stream(**kw) as stream:
            text = [t async for t in stream.text_stream]
            return _from_message(text, await stream.get_final_message())

    return asyncio.run(go())


def anthropic_beta_helper(sim: Simulator, kw: dict[str, Any]) -> Streamed:
    with sim.anthropic_client().beta.messages.stream(**kw) as stream:
        text = list(stream.text_stream)
        return _from_message(text, stream.get_final_message())


ANTHROPIC: dict[str, Mode] = {
    "create(stream=True)": anthropic_stream,
    "async create(stream=True)": anthropic_async_stream,
    "messages.stream()": anthropic_helper,
    "async messages.stream()": anthropic_async_helper,
    "beta.messages.stream()": anthropic_beta_helper,
}


def anthropic_request(**overrides: Any) -> dict[str, Any]:
    kw: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [{"role": "user", "content": "Should I pack an umbrella for Lyon tomorrow?"}],
    }
    kw.update(overrides)
    return kw
