"""Execution identity with no code (DESIGN "Execution identity"): without ``execution()``, a call whose
request carries reasoning blocks this process recorded joins their execution, so a conversation is one
execution across calls, traces and restarts, and redact mode works with no code change. Each call here
is its own trace (no parent span), as under ``opentelemetry-instrument`` without a framework span."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loom_otel.core import MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.core._continuation._bindings import forget_bindings
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES
from tests.continuation.gemini.modes import MODES as GEMINI_MODES
from tests.continuation.gemini.scenario import QUESTION, answers, config
from tests.support.anthropic_sdk import assistant_turn
from tests.support.tools import WEATHER

CANARY = "CANARY-identity-3f0d"
ROUNDS = 3


def _conversation(mode: str, sim: Simulator, *, restart: bool = False) -> list[Any]:
    """Three tool rounds, then a follow-up message in the same conversation and its tool rounds."""
    kw = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": {"type": "adaptive"}, "tools": [WEATHER]}
    history: list[Any] = []
    responses = []
    for question in ("Plan a rainy-day walk in Lyon.", "And in Grenoble?"):
        history.append({"role": "user", "content": question})
        for _ in range(ROUNDS + 1):
            message = MODES[mode](sim, {**kw, "messages": list(history)})
            responses.append(message)
            history.append(assistant_turn(message))
            if restart:
                forget_bindings()  # the next call reads the durable binding records, as a new process would
            if message.stop_reason != "tool_use":
                break
            call = next(b for b in message.content if b.type == "tool_use")
            result = {"type": "tool_result", "tool_use_id": call.id, "content": "rain"}
            history.append({"role": "user", "content": [result]})
    return responses


def _spans_of_calls(spans: Any) -> list[Any]:
    return [s for s in spans if s.name.startswith("chat ")]


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", list(MODES))
def test_an_anthropic_conversation_is_one_execution(mode: str, transcript: str, tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=ROUNDS)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript=transcript)
    with instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        responses = _conversation(mode, sim)
    assert [r.stop_reason for r in responses].count("end_turn") == 2  # both turns finished: nothing refused
    calls = _spans_of_calls(telemetry.spans)
    assert len(calls) == len(responses) == len(sim.requests)
    assert len({s.context.trace_id for s in calls}) == len(calls)  # every call its own trace
    first = f"{calls[0].context.trace_id:032x}"
    assert {s.attributes["loom.execution.id"] for s in calls} == {first}
    assert {s.attributes["gen_ai.conversation.id"] for s in calls} == {first}
    captured = reasoning_events(telemetry.spans)
    assert len(captured) == len(responses) and {e["loom.execution.id"] for e in captured} == {first}
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path]) == []


def test_a_restarted_process_continues_the_same_execution(tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=ROUNDS)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact")
    with instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        responses = _conversation("sync", sim, restart=True)
    assert [r.stop_reason for r in responses].count("end_turn") == 2
    assert len({e["loom.execution.id"] for e in reasoning_events(telemetry.spans)}) == 1


def test_an_explicit_execution_wins_and_another_tenant_is_never_joined(tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=1)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal")
    kw = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": {"type": "adaptive"}, "tools": [WEATHER]}
    history: list[Any] = [{"role": "user", "content": "Plan a rainy-day walk in Lyon."}]
    with instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        with execution("run-acme", tenant="acme"):
            first = MODES["sync"](sim, {**kw, "messages": list(history)})
        call = next(b for b in first.content if b.type == "tool_use")
        history += [
            assistant_turn(first),
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "rain"}]},
        ]
        MODES["sync"](sim, {**kw, "messages": list(history)})  # holds acme's block, but names no tenant
        with execution("run-explicit"):
            MODES["sync"](sim, {**kw, "messages": list(history)})
    executions = [e["loom.execution.id"] for e in reasoning_events(telemetry.spans)]
    assert executions[0] == "run-acme"
    assert executions[1] not in ("run-acme", "run-explicit") and len(executions[1]) == 32
    assert executions[2] == "run-explicit"


@pytest.mark.parametrize("mode", list(GEMINI_MODES))
def test_a_gemini_conversation_is_one_execution(mode: str, tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=ROUNDS, stream_chunks=3)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact")
    send, cfg = GEMINI_MODES[mode], config()
    with instrumented(GoogleGenAiInstrumentor(), config=settings) as telemetry:
        history, _ = send(sim, [], QUESTION, cfg)
        for _ in range(ROUNDS):
            history, _ = send(sim, history, answers(history), cfg)
        history, _ = send(sim, history, "And tomorrow?", cfg)
    calls = [s for s in telemetry.spans if s.name.startswith("generate_content ")]
    assert len(calls) == ROUNDS + 2 and len({s.context.trace_id for s in calls}) == len(calls)
    first = f"{calls[0].context.trace_id:032x}"
    assert {s.attributes["loom.execution.id"] for s in calls} == {first}
    assert {e["loom.execution.id"] for e in reasoning_events(telemetry.spans)} == {first}
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path]) == []


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", ["sync", "stream", "async_messages.stream"])
def test_a_system_prompt_that_changes_every_call_keeps_one_execution(
    mode: str, transcript: str, tmp_path: Path
) -> None:
    """A framework that writes the time into the system prompt unbinds every earlier block on every call:
    the blocks go (their binding does not hold, no text is put back), yet the request still carries them
    in the conversation they were handed in, so the conversation stays one execution."""
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=1)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript=transcript)
    drop = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    kw = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": drop, "tools": [WEATHER]}
    history: list[Any] = []
    with instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        for n, question in enumerate(("Plan a rainy-day walk in Lyon.", "And in Grenoble?", "And in Annecy?")):
            history.append({"role": "user", "content": question})
            message = MODES[mode](sim, {**kw, "system": f"You are a guide. Call {n}.", "messages": list(history)})
            history.append(assistant_turn(message))
            if message.stop_reason == "tool_use":
                call = next(b for b in message.content if b.type == "tool_use")
                result = {"type": "tool_result", "tool_use_id": call.id, "content": "rain"}
                history.append({"role": "user", "content": [result]})
                message = MODES[mode](sim, {**kw, "system": f"You are a guide. Call {n}b.", "messages": list(history)})
                history.append(assistant_turn(message))
    calls = _spans_of_calls(telemetry.spans)
    assert len(calls) == len(sim.requests) >= 4
    assert len({s.attributes["loom.execution.id"] for s in calls}) == 1
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path]) == []
