"""The live sink: per streaming mode, deltas equal the captured text, on their own channel."""

from __future__ import annotations

import logging
import threading

import pytest

from loom_otel.audit import PartStatus, read_reasoning
from loom_otel.core import ReasoningConfig, Untrusted, execution, step
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import ReasoningDelta, dropped_deltas, flush_live, register_sink
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator
from tests.live.modes import ANTHROPIC, anthropic_request

CANARY = "CANARY-live-4b1d"
THINKING = f"First I weigh the forecast for Lyon. {CANARY} Then I decide about the umbrella."


@pytest.fixture
def sim() -> Simulator:
    return Simulator(reasoning_text=THINKING, stream_chunks=7)


@pytest.mark.parametrize("mode", list(ANTHROPIC))
def test_deltas_concatenate_to_the_captured_text(mode, sim, live_config, sink, store, journal_dir):
    with (
        instrumented(AnthropicInstrumentor(), config=live_config),
        execution("run-7", tenant="acme", principal="alice", owner="olga"),
        step("plan"),
    ):
        streamed = ANTHROPIC[mode](sim, anthropic_request())
    assert flush_live()

    assert streamed.thinking == THINKING  # keep mode: the application's own stream is untouched
    assert len(sink.deltas) == 7
    assert [d.seq for d in sink.deltas] == list(range(1, 8))
    for delta in sink.deltas:
        assert isinstance(delta, ReasoningDelta)
        assert (delta.execution_id, delta.step_id, delta.tenant) == ("run-7", "plan", "acme")
        assert delta.provider == "anthropic" and delta.block_index == 0
        assert isinstance(delta.text, Untrusted) and delta.text.origin == "llm-reasoning:plan"
        assert CANARY not in repr(delta)
    assert len({d.call_id for d in sink.deltas}) == 1

    reading = read_reasoning(journal_dir, store, execution_id="run-7", step_id="plan", tenant="acme")
    (part,) = reading.parts
    assert part.status is PartStatus.OK and part.text is not None
    assert sink.text() == part.text.text == THINKING

    # Two channels: the answer never rides the reasoning channel, the reasoning never the answer's.
    assert streamed.text_deltas and all(CANARY not in t for t in streamed.text_deltas)
    assert CANARY not in streamed.answer
    assert all(streamed.answer[:12] not in d.text.text for d in sink.deltas)
    assert "answer" not in sink.text()


def test_blocks_keep_their_index(live_config, sink):
    sim = Simulator(reasoning_text=THINKING, stream_chunks=3, interleaved=True)
    tools = [{"name": "get_weather", "description": "w", "input_schema": {"type": "object", "properties": {}}}]
    with instrumented(AnthropicInstrumentor(), config=live_config), execution("run-8", principal="alice"):
        streamed = ANTHROPIC["messages.stream()"](sim, anthropic_request(tools=tools))
    assert flush_live()
    assert {d.block_index for d in sink.deltas} == {0}
    assert sink.text(0) == streamed.thinking


def test_off_by_default(sim, store, journal_dir, sink):
    config = ReasoningConfig(store=store, journal=journal_dir, on_reasoning=sink)
    with instrumented(AnthropicInstrumentor(), config=config):
        ANTHROPIC["create(stream=True)"](sim, anthropic_request())
    assert flush_live()
    assert sink.deltas == []


def test_environment_switch_with_a_sink_registered_in_code(sim, store, journal_dir, sink):
    unregister = register_sink(sink)
    try:
        config = ReasoningConfig(store=store, journal=journal_dir)
        with instrumented(AnthropicInstrumentor(), config=config, environ={"LOOM_OTEL_REASONING_LIVE": "true"}):
            ANTHROPIC["create(stream=True)"](sim, anthropic_request())
        assert flush_live()
    finally:
        unregister()
    assert sink.text() == THINKING


def test_complete_responses_deliver_nothing(sim, live_config, sink):
    with instrumented(AnthropicInstrumentor(), config=live_config):
        sim.anthropic_client().messages.create(**anthropic_request())
    assert flush_live()
    assert sink.deltas == []


def test_a_raising_sink_never_breaks_the_call(sim, store, journal_dir, caplog):
    calls = []

    def broken(delta: ReasoningDelta) -> None:
        calls.append(delta)
        raise RuntimeError(f"sink exploded on {delta.text.text}")

    config = ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=broken)
    caplog.set_level(logging.DEBUG)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry, execution("run-9"), step("s"):
        streamed = ANTHROPIC["messages.stream()"](sim, anthropic_request())
        streamed_again = ANTHROPIC["create(stream=True)"](sim, anthropic_request())
    assert flush_live()
    assert streamed.thinking == streamed_again.thinking == THINKING
    assert len(calls) == 14  # every delta was offered; each failure was skipped
    warnings = [r for r in caplog.records if "live sink" in r.getMessage()]
    assert len(warnings) == 1 and "RuntimeError" in warnings[0].getMessage()
    assert CANARY not in caplog.text
    assert len([s for s in telemetry.spans if s.events]) == 2  # both calls captured


def test_a_blocked_sink_never_stalls_the_call_and_drops_the_oldest(store, journal_dir, caplog):
    gate = threading.Event()
    released: list[int] = []

    def blocked(delta: ReasoningDelta) -> None:
        gate.wait(30)
        released.append(delta.seq)

    sim = Simulator(reasoning_text="x" * 3000, stream_chunks=3000)
    config = ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=blocked)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        streamed = ANTHROPIC["create(stream=True)"](sim, anthropic_request())
        assert streamed.thinking == "x" * 3000  # the call completed while the sink was still blocked
        assert len(telemetry.spans) == 1 and telemetry.spans[0].events
    assert not released
    gate.set()
    assert flush_live(10.0)
    assert dropped_deltas(blocked) == 3000 - 1024 - 1  # the queue holds 1024, the worker one
    assert len(released) == 1025 and released[-1] == 3000  # the newest are kept, the oldest dropped
    assert released == sorted(released)
    assert any("slower than the model stream" in r.getMessage() for r in caplog.records)
