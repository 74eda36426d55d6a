"""Frameworks that strip thinking from a tool round (issue 48): CrewAI 1.15 resends the tool-use turn as
its tool calls alone, AutoGen 0.7 resends the thought as a text block before them. Both are refused
bare (the in-flight round must start with its thinking block). Inside the explicit ``execution()`` that
produced the turn, loom-otel puts the thinking back from that execution's own records (found by the
turn's tool calls), so the agent works; never from another execution, and never with no ``execution()``
(zero code: unchanged from bare, and the discard warning names the framework's package)."""

from __future__ import annotations

import asyncio
import types
import warnings
from pathlib import Path
from typing import Any

import anthropic
import pytest

from loom_otel.core import LoomOtelWarning, MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.core.vendor_helpers import WITHHELD
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request
from tests.support.anthropic_sdk import assistant_turn
from tests.support.tools import WEATHER

CANARY = "CANARY-stripped-round-7c3a"
LOOP_MODES = ("sync", "async", "stream", "async_stream", "messages.stream", "async_messages.stream")


def _crewai(message: Any) -> dict[str, Any]:
    """CrewAI 1.15's resent tool-use turn: the tool calls alone."""
    return {
        "role": "assistant",
        "content": [b.model_dump(exclude_none=True) for b in message.content if b.type == "tool_use"],
    }


def _autogen(message: Any) -> dict[str, Any]:
    """AutoGen 0.7's resent tool-use turn: the thought as a text block, then the tool calls."""
    thought = next(b.thinking for b in message.content if b.type == "thinking")
    calls = [b.model_dump(exclude_none=True) for b in message.content if b.type == "tool_use"]
    return {"role": "assistant", "content": [{"type": "text", "text": thought}, *calls]}


SHAPES = {"crewai": _crewai, "autogen": _autogen}


def _sim() -> Simulator:
    return Simulator(strict=True, reasoning_text=f"Check the sky first. {CANARY}", max_tool_rounds=2)


def _kw(history: list[Any]) -> dict[str, Any]:
    return request(messages=list(history), tools=[WEATHER])


def _loop(sim: Simulator, mode: str, shape: str) -> list[Any]:
    history: list[Any] = [{"role": "user", "content": "Plan a rainy-day walk in Lyon."}]
    responses = []
    for _ in range(3):
        message = MODES[mode](sim, _kw(history))
        responses.append(message)
        history.append(SHAPES[shape](message) if message.stop_reason == "tool_use" else assistant_turn(message))
        if message.stop_reason != "tool_use":
            break
        call = next(b for b in message.content if b.type == "tool_use")
        history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]})
    return responses


def _sent_thinking(sim: Simulator, request_index: int) -> list[dict[str, Any]]:
    return [
        b
        for m in sim.requests[request_index].body["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "thinking"
    ]


# AutoGen's text block holds what the app was handed (in redact mode the placeholder: covered below).
CASES = [("crewai", "keep"), ("crewai", "redact"), ("autogen", "keep")]


@pytest.mark.parametrize(("shape", "transcript"), CASES)
@pytest.mark.parametrize("mode", LOOP_MODES)
def test_a_stripped_tool_round_is_restored_inside_its_execution(mode: str, shape: str, transcript: str, tmp_path: Path):
    bare = _sim()
    with pytest.raises(anthropic.BadRequestError, match="Expected `thinking` or `redacted_thinking`"):
        _loop(bare, mode, shape)
    sim = _sim()
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript=transcript)
    with (
        instrumented(AnthropicInstrumentor(), config=config) as telemetry,
        execution("crew-run"),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        responses = _loop(sim, mode, shape)
    assert responses[-1].stop_reason == "end_turn" and len(responses) == 3
    # The blocks put back are the ones the vendor produced: its signature, over the text it signed (the
    # strict simulator checks the one against the other; in keep mode the app held both).
    for n in (1, 2):
        (original,) = [b for b in responses[n - 1].content if b.type == "thinking"]
        (sent,) = _sent_thinking(sim, n)[-1:]
        assert sent["signature"] == original.signature and CANARY in sent["thinking"]
        if transcript == "keep":
            assert sent == {"type": "thinking", "thinking": original.thinking, "signature": original.signature}
    assert reasoning_events(telemetry.spans, "loom.reasoning.restored")
    (warning,) = [str(w.message) for w in caught if "sent back none of the reasoning" in str(w.message)]
    assert "loom-otel restored 2 block(s) from the store" in warning
    if shape == "autogen":  # the app's own text block stays as it sent it, after the restored thinking
        (turn,) = [m for m in sim.requests[1].body["messages"] if m["role"] == "assistant"]
        assert [b["type"] for b in turn["content"]] == ["thinking", "text", "tool_use"]
    visible = [r.model_dump_json() for r in responses] if transcript == "redact" else []
    assert find_leaks([CANARY], spans=telemetry.spans, texts=[*visible, *map(str, caught)]) == []


def test_autogen_in_redact_mode_sends_the_placeholder_text_as_is_and_restores_the_thinking(tmp_path: Path):
    sim = _sim()
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact")
    with (
        instrumented(AnthropicInstrumentor(), config=config),
        execution("autogen-run"),
        warnings.catch_warnings(record=True),
    ):
        warnings.simplefilter("always")
        responses = _loop(sim, "sync", "autogen")
    assert responses[-1].stop_reason == "end_turn"
    (turn,) = [m for m in sim.requests[1].body["messages"] if m["role"] == "assistant"]
    assert turn["content"][1] == {"type": "text", "text": WITHHELD}
    assert CANARY in turn["content"][0]["thinking"]


def test_nothing_is_restored_from_another_execution(tmp_path: Path):
    sim = _sim()
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal")
    history: list[Any] = [{"role": "user", "content": "Plan a rainy-day walk in Lyon."}]
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with execution("crew-a"):
            first = MODES["sync"](sim, _kw(history))
        call = next(b for b in first.content if b.type == "tool_use")
        history += [
            _crewai(first),
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]},
        ]
        with (
            execution("crew-b"),
            pytest.raises(anthropic.BadRequestError, match="Expected `thinking`"),
            pytest.warns(LoomOtelWarning, match="tool-use turn at message 1"),  # said at the first refusal
        ):
            MODES["sync"](sim, _kw(history))
    assert sim.requests[-1].body["messages"] == history  # exactly as the app sent it
    assert reasoning_events(telemetry.spans, "loom.reasoning.restored") == []
    assert find_leaks([CANARY], spans=telemetry.spans) == []


_FRAMEWORK = """
def call(create, kw):
    return create(**kw)
"""


def _framework_module(name: str) -> types.ModuleType:
    """A module named like a framework's (the call site the discard warning reads)."""
    module = types.ModuleType(name)
    exec(compile(_FRAMEWORK, f"<{name}>", "exec"), module.__dict__)
    return module


@pytest.mark.parametrize(("shape", "package"), [("crewai", "crewai.llm"), ("autogen", "autogen_ext.models.anthropic")])
def test_outside_an_execution_nothing_changes_and_the_warning_names_the_framework(
    shape: str, package: str, tmp_path: Path
):
    framework = _framework_module(package)
    bare = _sim()
    with pytest.raises(anthropic.BadRequestError) as bare_error:
        _loop(bare, "sync", shape)
    sim = _sim()
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal")
    history: list[Any] = [{"role": "user", "content": "Plan a rainy-day walk in Lyon."}]
    client = sim.anthropic_client()
    with (
        instrumented(AnthropicInstrumentor(), config=config) as telemetry,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        first = framework.call(client.messages.create, _kw(history))
        call = next(b for b in first.content if b.type == "tool_use")
        history += [
            SHAPES[shape](first),
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]},
        ]
        for attempt in range(2):  # the framework retries the refused call
            with pytest.raises(anthropic.BadRequestError) as error:
                framework.call(client.messages.create, _kw(history))
            assert str(error.value) == str(bare_error.value)
            assert sim.requests[-1].body["messages"] == history  # unchanged from bare
            messages = [str(w.message) for w in caught if "sent back none of the reasoning" in str(w.message)]
            assert len(messages) == 1, attempt  # at the first refused call already (the vendor's 400 ends a run)
    (message,) = messages
    assert "tool-use turn at message 1" in message and "execution()" in message
    assert f"{package.partition('.')[0]!r}" in message and f"<{package}>" in message
    assert find_leaks([CANARY], spans=telemetry.spans, texts=[str(w.message) for w in caught]) == []


_ASYNC_FRAMEWORK = """
import asyncio

async def steps(create, kw):
    yield await asyncio.ensure_future(create(**kw))

async def call(create, kw):
    async for answer in steps(create, kw):
        return answer
"""


def test_a_call_the_framework_runs_as_a_task_of_its_own_is_attributed_to_the_framework(tmp_path: Path):
    """AutoGen awaits ``asyncio.ensure_future(client.messages.create(...))`` from an async generator: the
    SDK call's own stack starts at the event loop, so the warning follows the task that awaits it to the
    framework's frame (its file:line and package), not to ``asyncio``."""
    package = "autogen_ext.models.anthropic"
    framework = types.ModuleType(package)
    exec(compile(_ASYNC_FRAMEWORK, f"<{package}>", "exec"), framework.__dict__)
    sim = _sim()
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal")
    client = sim.async_anthropic_client()
    history: list[Any] = [{"role": "user", "content": "Plan a rainy-day walk in Lyon."}]
    with (
        instrumented(AnthropicInstrumentor(), config=config),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        first = asyncio.run(framework.call(client.messages.create, _kw(history)))
        call = next(b for b in first.content if b.type == "tool_use")
        history += [
            _autogen(first),
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]},
        ]
        with pytest.raises(anthropic.BadRequestError):
            asyncio.run(framework.call(sim.async_anthropic_client().messages.create, _kw(history)))
    (message,) = [str(w.message) for w in caught if "tool-use turn" in str(w.message)]
    assert message.startswith(f"<{package}>:") and "made by 'autogen_ext'" in message
    assert find_leaks([CANARY], texts=[str(w.message) for w in caught]) == []
