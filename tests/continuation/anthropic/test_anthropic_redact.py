"""``transcript="redact"``: the application never holds readable thinking, and the strict simulator
still accepts every rehydrated block across a five-round tool loop, sync and streaming."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from loom_otel.core import MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.support.anthropic_sdk import accumulate_one, assistant_turn
from tests.support.tools import WEATHER

CANARY = "CANARY-redact-91b2"
ROUNDS = 5


def _seen_sync(sim: Simulator, kw: dict[str, Any], seen: list[Any]) -> Any:
    return sim.anthropic_client().messages.create(**kw)


def _seen_stream(sim: Simulator, kw: dict[str, Any], seen: list[Any]) -> Any:
    with sim.anthropic_client().messages.stream(**kw) as stream:
        for event in stream:
            seen.append(event)
        return stream.get_final_message()


def _seen_raw_stream(sim: Simulator, kw: dict[str, Any], seen: list[Any]) -> Any:
    snapshot = None
    bufs: dict[int, bytes] = {}
    with sim.anthropic_client().messages.create(stream=True, **kw) as stream:
        for event in stream:
            seen.append(event)
            snapshot = accumulate_one(event, snapshot, bufs)
    return snapshot


def _seen_async_stream(sim: Simulator, kw: dict[str, Any], seen: list[Any]) -> Any:
    async def go() -> Any:
        async with sim.async_anthropic_client().messages.stream(**kw) as stream:
            async for event in stream:
                seen.append(event)
            return await stream.get_final_message()

    return asyncio.run(go())


SENDERS = {
    "sync": _seen_sync,
    "stream": _seen_raw_stream,
    "messages.stream": _seen_stream,
    "async_messages.stream": _seen_async_stream,
}


@pytest.mark.parametrize("digest", ["sha256", "hmac-sha256"])
@pytest.mark.parametrize("mode", list(SENDERS))
def test_five_round_tool_loop_app_never_sees_reasoning(mode: str, digest: str, tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=ROUNDS)
    store = MemoryReasoningStore()
    config = ReasoningConfig(store=store, journal=tmp_path / "journal", transcript="redact", digest=digest)
    seen: list[Any] = []
    history: list[Any] = [{"role": "user", "content": "Plan a rainy-day walk in Lyon."}]
    kw = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": {"type": "adaptive"}, "tools": [WEATHER]}
    responses = []
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry, execution("run-redact"):
        for _ in range(ROUNDS + 1):
            message = SENDERS[mode](sim, {**kw, "messages": list(history)}, seen)
            responses.append(message)
            history.append(assistant_turn(message))
            if message.stop_reason != "tool_use":
                break
            call = next(b for b in message.content if b.type == "tool_use")
            history.append(
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]}
            )
    assert responses[-1].stop_reason == "end_turn" and len(responses) == ROUNDS + 1
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    # The vendor received the readable text it signed, on every request after the first.
    for request in sim.requests[1:]:
        thinking = [
            b
            for m in request.body["messages"]
            if m["role"] == "assistant"
            for b in m["content"]
            if b["type"] == "thinking"
        ]
        assert thinking and all(CANARY in b["thinking"] for b in thinking)
    # ... and the application never held it.
    visible = [
        *(r.model_dump_json() for r in responses),
        json.dumps(history, default=lambda o: o.model_dump(mode="json")),
        *(e.model_dump_json() for e in seen),
    ]
    assert find_leaks([CANARY], texts=visible) == []
    assert all(b.signature for r in responses for b in r.content if b.type == "thinking")
    assert len(store) == 1  # the text is kept in the store (one text, content-addressed)
    # hmac-sha256: no plain digest of the text anywhere beside the journal (records, binding files).
    plain = {hashlib.sha256(b["thinking"].encode()).hexdigest() for b in _thinking_blocks(sim)}
    assert plain
    leaks = find_leaks(sorted(plain), directories=[tmp_path])
    assert (leaks == []) if digest == "hmac-sha256" else leaks


def _thinking_blocks(sim: Simulator) -> list[dict[str, Any]]:
    return [
        b
        for request in sim.requests
        for m in request.body["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "thinking"
    ]
