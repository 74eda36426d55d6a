"""The discard check (ADR D7 "direct-path check"), at the Anthropic seam in every call mode: a framework
that sends the history back without the reasoning blocks every turn gets one warning naming its call
site and what happened; ``LOOM_OTEL_REQUIRE_CONTINUATION=true`` makes it an error before anything is
sent; ``LOOM_OTEL_REASONING=false`` silences it."""

from __future__ import annotations

import warnings
from typing import Any

import anthropic
import pytest

from loom_otel.core import (
    LoomOtelWarning,
    MemoryReasoningStore,
    ReasoningConfig,
    ReasoningContinuationError,
    execution,
)
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.anthropic import modes
from tests.anthropic.modes import MODES, request
from tests.support.anthropic_sdk import assistant_turn
from tests.support.tools import WEATHER

CANARY = "CANARY-discard-5b90"
QUESTIONS = ("Umbrella for Lyon?", "And for Paris?", "And for Nice?")


def _without_reasoning(message: Any) -> dict[str, Any]:
    """What a framework that keeps only text and tool calls sends back."""
    param = assistant_turn(message)
    kept = [b for b in param["content"] if (b["type"] if isinstance(b, dict) else b.type) in ("text", "tool_use")]
    return {**param, "content": kept}


def _conversation(mode: str, sim: Simulator, *, strip: bool) -> list[Any]:
    history: list[Any] = []
    for question in QUESTIONS:
        history.append({"role": "user", "content": question})
        message = MODES[mode](sim, request(messages=list(history)))
        history.append(_without_reasoning(message) if strip else assistant_turn(message))
    return history


def _discard_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "sent back none of the reasoning" in str(w.message)]


@pytest.mark.parametrize("mode", list(MODES))
def test_a_framework_that_strips_reasoning_every_turn_is_warned_once(mode, store, journal_dir):
    sim = Simulator(reasoning_text=f"Think first. {CANARY}")
    config = ReasoningConfig(store=store, journal=journal_dir)
    with instrumented(AnthropicInstrumentor(), config=config), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _conversation(mode, sim, strip=False)  # sends its reasoning back: nothing to say
        assert _discard_warnings(caught) == []
        _conversation(mode, sim, strip=True)
        _conversation(mode, sim, strip=True)  # once per process
    (message,) = _discard_warnings(caught)
    (warning,) = [w for w in caught if str(w.message) == message]
    assert warning.category is LoomOtelWarning and warning.filename == modes.__file__  # the call site
    assert f"{modes.__file__}:{warning.lineno}" in message and "two consecutive turns" in message
    assert "dropped: not a tool round" in message
    assert find_leaks([CANARY], texts=[str(w.message) for w in caught]) == []


@pytest.mark.parametrize("mode", list(MODES))
def test_require_continuation_refuses_a_request_whose_reasoning_would_be_dropped(mode, store, journal_dir, monkeypatch):
    monkeypatch.setenv("LOOM_OTEL_REQUIRE_CONTINUATION", "true")
    sim = Simulator(reasoning_text=f"Think first. {CANARY}")
    config = ReasoningConfig(store=store, journal=journal_dir)
    with instrumented(AnthropicInstrumentor(), config=config):
        history: list[Any] = [{"role": "user", "content": QUESTIONS[0]}]
        history.append(_without_reasoning(MODES[mode](sim, request(messages=list(history)))))
        history.append({"role": "user", "content": QUESTIONS[1]})
        sent = len(sim.requests)
        with pytest.raises(ReasoningContinuationError, match="LOOM_OTEL_REQUIRE_CONTINUATION") as info:
            MODES[mode](sim, request(messages=list(history)))
    assert len(sim.requests) == sent  # nothing was sent
    assert find_leaks([CANARY], texts=[str(info.value)]) == []


def test_stripped_tool_rounds_are_restored_and_the_warning_says_so(store, journal_dir):
    sim = Simulator(strict=True, reasoning_text=f"Think first. {CANARY}", max_tool_rounds=3)
    config = ReasoningConfig(store=store, journal=journal_dir)
    history: list[Any] = [{"role": "user", "content": QUESTIONS[0]}]
    instrumenting = instrumented(AnthropicInstrumentor(), config=config)
    # a stripped round's text is put back inside the execution that made it
    with instrumenting, warnings.catch_warnings(record=True) as caught, execution("run-tools"):
        warnings.simplefilter("always")
        for _ in range(4):
            message = MODES["sync"](sim, request(messages=list(history), tools=[WEATHER]))
            history.append(_without_reasoning(message))
            if message.stop_reason != "tool_use":
                break
            call = next(b for b in message.content if b.type == "tool_use")
            history.append(
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]}
            )
    assert message.stop_reason == "end_turn"  # the strict simulator accepted every restored round
    (text,) = _discard_warnings(caught)
    assert "loom-otel restored 2 block(s) from the store" in text  # both stripped rounds, on the third request


def test_loom_otel_off_says_nothing(store, journal_dir, monkeypatch):
    monkeypatch.setenv("LOOM_OTEL_REASONING", "false")
    sim = Simulator(reasoning_text=f"Think first. {CANARY}")
    with instrumented(AnthropicInstrumentor(), config=ReasoningConfig(journal=journal_dir)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _conversation("sync", sim, strip=True)
    assert _discard_warnings(caught) == [] and len(MemoryReasoningStore()) == 0


def _first_tool_round(mode: str, sim: Simulator, **overrides: Any) -> list[Any]:
    """A first request that calls a tool, then the history a framework rebuilds: the tool-use turn
    without its thinking block, and the tool result (CrewAI's and AutoGen's tool loop)."""
    history: list[Any] = [{"role": "user", "content": QUESTIONS[0]}]
    message = MODES[mode](sim, request(messages=list(history), tools=[WEATHER], **overrides))
    call = next(b for b in message.content if b.type == "tool_use")
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "rain"}]}
    return [*history, _without_reasoning(message), result]


def _ours(caught: list[warnings.WarningMessage]) -> list[str]:
    """The warnings this test's calls gave: not a ``ResourceWarning`` the garbage collector raises for an
    earlier test's unclosed event-loop transport, which can fall inside any test."""
    return [str(w.message) for w in caught if not issubclass(w.category, ResourceWarning)]


@pytest.mark.parametrize("mode", list(MODES))
def test_a_stripped_tool_round_outside_any_execution_is_warned_at_the_first_request(mode, store, journal_dir):
    """The vendor rejects the tool round without its thinking block (thinking on), so no second turn ever
    comes: the warning is given at the first, before the request goes (and is rejected)."""
    sim = Simulator(strict=True, reasoning_text=f"Think first. {CANARY}", max_tool_rounds=2)
    config = ReasoningConfig(store=store, journal=journal_dir)
    with instrumented(AnthropicInstrumentor(), config=config), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = _first_tool_round(mode, sim)
        assert _discard_warnings(caught) == [] and _ours(caught) == []
        with pytest.raises(anthropic.BadRequestError, match="thinking"):
            MODES[mode](sim, request(messages=history, tools=[WEATHER]))
    (message,) = [str(w.message) for w in caught if "tool-use turn" in str(w.message)]
    (warning,) = [w for w in caught if str(w.message) == message]
    assert warning.category is LoomOtelWarning and warning.filename == modes.__file__  # the call site
    assert f"{modes.__file__}:{warning.lineno}" in message and "'tests'" in message  # the package making the call
    assert "message 1" in message and "rejects" in message and "execution()" in message
    assert find_leaks([CANARY], texts=[str(w.message) for w in caught]) == []


def test_a_stripped_tool_round_with_thinking_off_keeps_the_two_turn_rule(store, journal_dir):
    """Thinking off in the request that sends the round back: the vendor accepts it, nothing is said."""
    sim = Simulator(strict=True, reasoning_text=f"Think first. {CANARY}", max_tool_rounds=2)
    config = ReasoningConfig(store=store, journal=journal_dir)
    with instrumented(AnthropicInstrumentor(), config=config), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = _first_tool_round("sync", sim)
        answer = MODES["sync"](sim, request(messages=history, tools=[WEATHER], thinking={"type": "disabled"}))
    assert answer.content and _ours(caught) == []
