"""OpenAI continuation over the simulator: Chat Completions ``reasoning_content`` (DeepSeek requires it
back on tool-call turns) and the Responses API (``input_transformations``, summaries, encrypted
content), sync, async and streamed."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import openai
import pytest

from loom_otel.core import LoomOtelWarning, MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.core.exceptions import ReasoningContinuationError
from loom_otel.core.vendor_helpers import WITHHELD
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.support.stores import FlakyStore

CANARY = "CANARY-openai-continuation-0b4d"
MODEL = "deepseek-reasoner"
TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
RESPONSES_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
QUESTION = "Should I pack an umbrella for Lyon tomorrow?"
MODES = ("sync", "async", "stream", "async_stream")


def _chat_stream_message(chunks: list[Any]) -> dict[str, Any]:
    """What an application builds from the chunks it was handed."""
    content, calls = "", dict[int, dict[str, Any]]()
    for chunk in chunks:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for call in choice.delta.tool_calls or ():
                slot = calls.setdefault(call.index, {"id": None, "type": "function", "function": {"arguments": ""}})
                slot["id"] = call.id or slot["id"]
                if call.function and call.function.name:
                    slot["function"]["name"] = call.function.name
                if call.function and call.function.arguments:
                    slot["function"]["arguments"] += call.function.arguments
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = [c for _, c in sorted(calls.items())]
    return message


def chat_send(mode: str, sim: Simulator, kw: dict[str, Any], seen: list[Any]) -> dict[str, Any]:
    """One request; returns the assistant message as the application keeps it (a dict)."""
    if mode == "sync":
        completion = sim.openai_client().chat.completions.create(**kw)
        seen.append(completion)
        return dict(completion.choices[0].message.model_dump(exclude_none=True))
    if mode == "stream":
        chunks = list(sim.openai_client().chat.completions.create(stream=True, **kw))
        seen.extend(chunks)
        return _chat_stream_message(chunks)

    async def go() -> dict[str, Any]:
        client = sim.async_openai_client()
        if mode == "async":
            completion = await client.chat.completions.create(**kw)
            seen.append(completion)
            return dict(completion.choices[0].message.model_dump(exclude_none=True))
        chunks = [c async for c in await client.chat.completions.create(stream=True, **kw)]
        seen.extend(chunks)
        return _chat_stream_message(chunks)

    return asyncio.run(go())


def chat_loop(mode: str, sim: Simulator, seen: list[Any]) -> list[dict[str, Any]]:
    """Up to the point where the tool result goes back: user, assistant(tool_calls), tool."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    message = chat_send(mode, sim, {"model": MODEL, "messages": messages, "tools": [TOOL]}, seen)
    assert message.get("tool_calls")
    call = message["tool_calls"][0]
    return [*messages, message, {"role": "tool", "tool_call_id": call["id"], "content": "Rain, 14C."}]


@pytest.mark.parametrize("mode", MODES)
def test_chat_redact_rehydrates_reasoning_content(mode: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    sim = Simulator(strict=True, reasoning_text=f"Check the forecast first. {CANARY}")
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact")
    seen: list[Any] = []
    # DEBUG everywhere: the SDKs log request bodies, which loom-otel says once (it cannot reach them).
    debug = pytest.warns(LoomOtelWarning, match="log at DEBUG")
    with debug, instrumented(OpenAiInstrumentor(), config=config) as telemetry, execution("run-1"):
        messages = chat_loop(mode, sim, seen)
        final = chat_send(mode, sim, {"model": MODEL, "messages": messages, "tools": [TOOL]}, seen)
    assert final["content"]  # the strict (DeepSeek) simulator accepted the tool round
    sent = sim.requests[-1].body["messages"][1]
    assert CANARY in sent["reasoning_content"]  # the vendor got it back ...
    visible = [*(s.model_dump_json() for s in seen), json.dumps(messages), json.dumps(final), caplog.text]
    assert find_leaks([CANARY], texts=visible) == []  # ... the application never held it
    assert WITHHELD not in sent["reasoning_content"]  # the placeholder the application held never went out
    assert messages[1].get("reasoning_content") == (None if "stream" in mode else WITHHELD)
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path]) == []
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    captured = reasoning_events(telemetry.spans)
    assert len(captured) == 2 and all(all(e["loom.reasoning.part.ref"]) for e in captured)

    with pytest.raises(openai.BadRequestError) as refused:  # without loom-otel: DeepSeek's 400
        held = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in messages]
        bare: dict[str, Any] = {"model": MODEL, "messages": held, "tools": [TOOL]}
        sim.openai_client().chat.completions.create(**bare)
    assert refused.value.status_code == 400


@pytest.mark.parametrize("case", ["erased", "other_execution", "store_raises"])
def test_chat_redact_unresolvable(case: str, flaky_store: FlakyStore, tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Check the forecast first. {CANARY}")
    config = ReasoningConfig(store=flaky_store, journal=tmp_path / "journal", transcript="redact")
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        with execution("run-1"):
            messages = chat_loop("sync", sim, [])
        if case == "erased":
            flaky_store.erase_execution(None, "run-1")
        flaky_store.broken = case == "store_raises"
        before = len(sim.requests)
        with execution("run-2" if case == "other_execution" else "run-1"):
            if case == "store_raises":
                with pytest.raises(ReasoningContinuationError) as raised:
                    chat_send("sync", sim, {"model": MODEL, "messages": messages, "tools": [TOOL]}, [])
                assert len(sim.requests) == before  # nothing was sent
                assert CANARY not in str(raised.value)
                return
            with pytest.raises(openai.BadRequestError):  # sent without it: the vendor's own answer
                chat_send("sync", sim, {"model": MODEL, "messages": messages, "tools": [TOOL]}, [])
    if case == "other_execution":  # another execution's message is never found (records are keyed by scope)
        assert reasoning_events(telemetry.spans[-1:], "loom.reasoning.dropped") == []
        assert CANARY not in json.dumps(sim.requests[-1].body)
        return
    (event,) = reasoning_events(telemetry.spans[-1:], "loom.reasoning.dropped")
    assert event == {
        "loom.reasoning.drop.reason": "unresolvable",
        "loom.reasoning.drop.count": 1,
        "loom.reasoning.drop.positions": ("messages.1",),
    }


# --- Responses API -----------------------------------------------------------------------------------


def responses_send(mode: str, sim: Simulator, kw: dict[str, Any], seen: list[Any]) -> Any:
    """One request; returns the final ``Response``."""
    if mode == "sync":
        response = sim.openai_client().responses.create(**kw)
        seen.append(response)
        return response
    if mode == "stream":
        events = list(sim.openai_client().responses.create(stream=True, **kw))
        seen.extend(events)
        return events[-1].response

    async def go() -> Any:
        client = sim.async_openai_client()
        if mode == "async":
            response = await client.responses.create(**kw)
            seen.append(response)
            return response
        events = [e async for e in await client.responses.create(stream=True, **kw)]
        seen.extend(events)
        return events[-1].response

    return asyncio.run(go())


def responses_loop(mode: str, sim: Simulator, seen: list[Any], rounds: int) -> list[Any]:
    """A tool loop keeping every output item (as dicts) in the input, as the docs advise."""
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    kw = {
        "model": "o5",
        "tools": [RESPONSES_TOOL],
        "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "store": False,
    }
    for _ in range(rounds + 1):
        response = responses_send(mode, sim, {**kw, "input": list(items)}, seen)
        items += [o.model_dump(exclude_none=True) for o in response.output]
        calls = [o for o in response.output if o.type == "function_call"]
        if not calls:
            break
        items.append({"type": "function_call_output", "call_id": calls[0].call_id, "output": "Rain, 14C."})
    return items


@pytest.mark.parametrize("mode", MODES)
def test_responses_vendor_drops_become_events(mode: str, tmp_path: Path) -> None:
    sim = Simulator(strict=True)
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal")
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        items = responses_loop(mode, sim, [], rounds=1)
        edited = [{"role": "user", "content": "Umbrella for Lyon on Friday?"}, *items[1:]]
        response = responses_send(mode, sim, {"model": "o5", "input": edited, "store": False}, [])
    reasoning_at = [f"input.{i}" for i, item in enumerate(edited) if item.get("type") == "reasoning"]
    assert len(response.input_transformations) == len(reasoning_at) == 2
    (event,) = reasoning_events(telemetry.spans[-1:], "loom.reasoning.vendor_dropped")
    assert event == {
        "loom.reasoning.drop.reason": "prefix_mismatch",
        "loom.reasoning.drop.count": 2,
        "loom.reasoning.drop.positions": tuple(reasoning_at),
    }


@pytest.mark.parametrize("mode", MODES)
def test_responses_redact_blanks_summaries_and_rehydrates(mode: str, tmp_path: Path) -> None:
    def simulator() -> Simulator:
        return Simulator(strict=True, reasoning_text=f"Check the forecast first. {CANARY}", max_tool_rounds=2)

    sim, seen = simulator(), list[Any]()
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact")
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry, execution("run-1"):
        items = responses_loop(mode, sim, seen, rounds=2)
    bare = simulator()
    responses_loop(mode, bare, [], rounds=2)
    # The vendor received exactly what the bare SDK sends (summaries back, encrypted content as is) ...
    assert [r.body for r in sim.requests] == [r.body for r in bare.requests]
    # ... and the application never held the summary text.
    assert find_leaks([CANARY], texts=[*(s.model_dump_json() for s in seen), json.dumps(items)]) == []
    encrypted = [i["encrypted_content"] for i in items if i.get("type") == "reasoning"]
    assert len(encrypted) == 3
    secrets = [CANARY, *encrypted]
    assert find_leaks(secrets, spans=telemetry.spans, directories=[tmp_path]) == []
    assert reasoning_events(telemetry.spans, "loom.reasoning.vendor_dropped") == []
    captured = reasoning_events(telemetry.spans)  # the evidence was kept before the app's copy was blanked
    assert len(captured) == 3 and all(all(e["loom.reasoning.part.ref"]) for e in captured)
