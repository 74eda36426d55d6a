"""Never worse than bare (DESIGN "the continuation invariant"): what the strict simulator accepts from
the bare SDK it accepts from the instrumented one, in every call mode. Scenarios the agent frameworks
produce: a system prompt that changes inside a tool round (pydantic-ai ``@agent.instructions``,
LangChain ``@dynamic_prompt``), with and without the vendor's server-side stale-block handling, and
google-adk's ``redacted_thinking`` form of an emptied thinking block in redact mode."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES
from tests.support.anthropic_sdk import assistant_turn
from tests.support.tools import WEATHER

CANARY = "CANARY-never-worse-8c4a"
DROP_BLOCK = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}


def _simulator() -> Simulator:
    return Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=2)


def _tool_round(
    send: Callable[[Simulator, dict[str, Any]], Any],
    sim: Simulator,
    thinking: dict[str, Any],
    edit: Callable[[Any], Any] = assistant_turn,
) -> str:
    """A first call that asks for a tool, then the tool result under a CHANGED system prompt; returns
    ``ok`` or the vendor's refusal."""
    kw = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": thinking, "tools": [WEATHER]}
    history: list[Any] = [{"role": "user", "content": "Plan a rainy-day walk in Lyon."}]
    first = send(sim, {**kw, "system": "You are a guide. Today is Monday.", "messages": history})
    call = next(b for b in first.content if b.type == "tool_use")
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "rain"}]}
    history = [*history, edit(first), result]
    try:
        send(sim, {**kw, "system": "You are a guide. Today is Tuesday.", "messages": history})
    except anthropic.BadRequestError as exc:
        return f"rejected: {exc.message}"
    return "ok"


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", list(MODES))
def test_a_system_change_in_a_tool_round_with_vendor_drops_is_accepted_as_bare(
    mode: str, transcript: str, tmp_path: Path
) -> None:
    bare = _tool_round(MODES[mode], _simulator(), DROP_BLOCK)
    assert bare == "ok"
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript=transcript)
    with instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        assert _tool_round(MODES[mode], _simulator(), DROP_BLOCK) == bare
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    (kept,) = reasoning_events(telemetry.spans, "loom.reasoning.kept")
    assert kept["loom.reasoning.drop.reason"] == "system_changed"
    assert kept["loom.reasoning.kept.because"] == "vendor_drops"
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path]) == []


@pytest.mark.parametrize("mode", ["sync", "stream", "messages.stream", "async"])
def test_a_system_change_in_a_tool_round_is_sent_as_the_app_holds_it(mode: str, tmp_path: Path) -> None:
    """Without server-side drops the vendor refuses the stale block; dropping it would break the rule
    that a tool round starts with its thinking block. Either way a refusal: loom-otel makes no drop."""
    bare = _tool_round(MODES[mode], _simulator(), {"type": "adaptive"})
    assert bare.startswith("rejected")
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j")
    sim = _simulator()
    with instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        assert _tool_round(MODES[mode], sim, {"type": "adaptive"}) == bare
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    (kept,) = reasoning_events(telemetry.spans, "loom.reasoning.kept")
    assert kept["loom.reasoning.kept.because"] == "tool_round"
    assert sim.requests[1].body["messages"][1]["content"][0]["type"] == "thinking"


def _adk_form(message: Any) -> dict[str, Any]:
    """google-adk's rebuild of an assistant turn whose thinking text is empty: ``redacted_thinking``
    carrying the thinking block's signature."""
    content = []
    for block in message.content:
        if block.type == "thinking" and not block.thinking:
            content.append({"type": "redacted_thinking", "data": block.signature})
        else:
            content.append(block.model_dump(exclude_none=True))
    return {"role": "assistant", "content": content}


@pytest.mark.parametrize("mode", list(MODES))
def test_google_adk_redacted_form_of_an_emptied_block_is_put_back(mode: str, tmp_path: Path) -> None:
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    sim = _simulator()
    with instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        kw = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": {"type": "adaptive"}, "tools": [WEATHER]}
        history: list[Any] = [{"role": "user", "content": "Plan a rainy-day walk in Lyon."}]
        first = MODES[mode](sim, {**kw, "messages": history})
        call = next(b for b in first.content if b.type == "tool_use")
        result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "rain"}]}
        MODES[mode](sim, {**kw, "messages": [*history, _adk_form(first), result]})  # accepted: no exception
    sent = sim.requests[1].body["messages"][1]["content"][0]
    assert sent["type"] == "thinking" and CANARY in sent["thinking"]
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path]) == []
