"""Redact mode under a framework that drops empty thinking blocks (LlamaIndex 0.14 keeps a thinking block
only when its text is non-empty): the block the application is handed carries a non-empty placeholder
(``WITHHELD``), so it survives the filter, and it is replaced by the stored text on the way out.
Zero code (no ``execution()``), every call mode, the strict simulator signing and checking each text."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import pytest

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.core._calls._withheld import WITHHELD
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.support.anthropic_sdk import accumulate_one, assistant_turn
from tests.support.tools import WEATHER

CANARY = "CANARY-filter-5d1e"
ROUNDS = 2


def _sync(sim: Simulator, kw: dict[str, Any], seen: list[Any]) -> Any:
    return sim.anthropic_client().messages.create(**kw)


def _async(sim: Simulator, kw: dict[str, Any], seen: list[Any]) -> Any:
    async def go() -> Any:
        return await sim.async_anthropic_client().messages.create(**kw)

    return asyncio.run(go())


def _stream(sim: Simulator, kw: dict[str, Any], seen: list[Any]) -> Any:
    snapshot = None
    bufs: dict[int, bytes] = {}
    with sim.anthropic_client().messages.create(stream=True, **kw) as stream:
        for event in stream:
            seen.append(event)
            snapshot = accumulate_one(event, snapshot, bufs)
    return snapshot


def _async_stream(sim: Simulator, kw: dict[str, Any], seen: list[Any]) -> Any:
    async def go() -> Any:
        snapshot = None
        bufs: dict[int, bytes] = {}
        stream = await sim.async_anthropic_client().messages.create(stream=True, **kw)
        async for event in stream:
            seen.append(event)
            snapshot = accumulate_one(event, snapshot, bufs)
        return snapshot

    return asyncio.run(go())


def _helper_stream(sim: Simulator, kw: dict[str, Any], seen: list[Any]) -> Any:
    with sim.anthropic_client().messages.stream(**kw) as stream:
        for event in stream:
            seen.append(event)
        return stream.get_final_message()


SENDERS = {
    "sync": _sync,
    "async": _async,
    "stream": _stream,
    "async_stream": _async_stream,
    "messages.stream": _helper_stream,
}


def _llamaindex_turn(message: Any) -> dict[str, Any]:
    """The assistant turn as LlamaIndex 0.14 rebuilds it: a thinking block only if its text is non-empty."""
    content = [
        block
        for block in assistant_turn(message)["content"]
        if not (_field(block, "type") == "thinking" and not _field(block, "thinking"))
    ]
    return {"role": "assistant", "content": content}


def _field(block: Any, name: str) -> Any:
    return block.get(name) if isinstance(block, dict) else getattr(block, name, None)


def _loop(sim: Simulator, mode: str, seen: list[Any]) -> tuple[list[Any], list[Any]]:
    history: list[Any] = [{"role": "user", "content": "Plan a rainy-day walk in Lyon."}]
    kw = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": {"type": "adaptive"}, "tools": [WEATHER]}
    responses = []
    for _ in range(ROUNDS + 1):
        message = SENDERS[mode](sim, {**kw, "messages": list(history)}, seen)
        responses.append(message)
        history.append(_llamaindex_turn(message))
        if message.stop_reason != "tool_use":
            break
        call = next(b for b in message.content if b.type == "tool_use")
        history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]})
    return responses, history


@pytest.mark.parametrize("mode", list(SENDERS))
def test_a_framework_that_drops_empty_thinking_blocks_keeps_working_in_redact_mode(mode: str, tmp_path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=ROUNDS)
    bare, _ = _loop(sim, mode, [])  # the agent works bare
    assert bare[-1].stop_reason == "end_turn" and len(bare) == ROUNDS + 1
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=ROUNDS)
    store = MemoryReasoningStore()
    config = ReasoningConfig(store=store, journal=tmp_path / "journal", transcript="redact")
    seen: list[Any] = []
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        responses, history = _loop(sim, mode, seen)
    assert responses[-1].stop_reason == "end_turn" and len(responses) == ROUNDS + 1
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    # The application held the placeholder, never the text ...
    held = [b.thinking for r in responses for b in r.content if b.type == "thinking"]
    assert held and set(held) == {WITHHELD}
    visible = [
        *(r.model_dump_json() for r in responses),
        json.dumps(history, default=lambda o: o.model_dump(mode="json")),
        *(e.model_dump_json() for e in seen),
    ]
    assert find_leaks([CANARY], texts=visible) == []
    # ... and the vendor got the text it signed back in every assistant turn (the placeholder never).
    for request in sim.requests[1:]:
        thinking = [
            b["thinking"]
            for m in request.body["messages"]
            if m["role"] == "assistant"
            for b in m["content"]
            if b["type"] == "thinking"
        ]
        assert thinking and all(CANARY in t and WITHHELD not in t for t in thinking)
    assert find_leaks([CANARY], spans=telemetry.spans) == []


def test_the_placeholder_left_in_a_block_fails_the_signature_and_elsewhere_goes_as_sent(tmp_path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=1)
    store = MemoryReasoningStore()
    config = ReasoningConfig(store=store, journal=tmp_path / "journal", transcript="redact")
    kw = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": {"type": "adaptive"}, "tools": [WEATHER]}
    history: list[Any] = [{"role": "user", "content": "Plan a rainy-day walk in Lyon."}]
    with instrumented(AnthropicInstrumentor(), config=config):
        message = sim.anthropic_client().messages.create(**kw, messages=history)
    turn = assistant_turn(message)
    call = next(b for b in message.content if b.type == "tool_use")
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]}
    # Bare (loom-otel not there to replace it), the placeholder is a modified text: the vendor refuses it.
    with pytest.raises(anthropic.BadRequestError):
        sim.anthropic_client().messages.create(**kw, messages=[*history, turn, result])
    # Quoted by the application in a user message, it goes out as sent, and carries nothing.
    quoted = [{"role": "user", "content": [{"type": "text", "text": f"Earlier you said {WITHHELD}"}]}]
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        answer = sim.anthropic_client().messages.create(**kw, messages=quoted)
    assert sim.requests[-1].body["messages"] == quoted
    assert find_leaks([CANARY], texts=[answer.model_dump_json()], spans=telemetry.spans) == []
