"""Delta guards: pass, rewrite, suppress; a failing guard suppresses; ``inspects_output`` refuses."""

from __future__ import annotations

import dataclasses
import logging
import re

from loom_otel.audit import read_reasoning
from loom_otel.core import ReasoningConfig, Untrusted, execution, step
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import ReasoningDelta, flush_live
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator
from tests.live.modes import ANTHROPIC, anthropic_request

EMAIL = re.compile(r"[\w.]+@[\w.]+")
THINKING = "Mail the forecast to ana@example.org before noon, then answer."


def _run(config: ReasoningConfig, mode: str = "messages.stream()", chunks: int = 1):
    sim = Simulator(reasoning_text=THINKING, stream_chunks=chunks)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry, execution("g-1"), step("s"):
        streamed = ANTHROPIC[mode](sim, anthropic_request())
    assert flush_live()
    return streamed, telemetry


def _config(store, journal_dir, sink, *guards) -> ReasoningConfig:
    return ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=sink, delta_guards=guards)


def test_guards_run_in_order_and_may_rewrite(store, journal_dir, sink):
    seen = []

    def mask(delta: ReasoningDelta) -> ReasoningDelta:
        seen.append("mask")
        masked = EMAIL.sub("[email]", delta.text.text)
        return dataclasses.replace(delta, text=Untrusted(masked, origin=delta.text.origin))

    def audit(delta: ReasoningDelta) -> ReasoningDelta:
        seen.append("audit")
        assert "@" not in delta.text.text
        return delta

    streamed, _ = _run(_config(store, journal_dir, sink, mask, audit))
    assert seen == ["mask", "audit"]
    assert sink.text() == "Mail the forecast to [email] before noon, then answer."
    assert "ana@example.org" in streamed.thinking  # the guard shapes the live view, not the response
    (part,) = read_reasoning(journal_dir, store, execution_id="g-1", step_id="s").parts
    assert part.text is not None and part.text.text == THINKING  # nor the durable record


def test_a_guard_cannot_reroute_a_delta(store, journal_dir, sink):
    def reroute(delta: ReasoningDelta) -> ReasoningDelta:
        return dataclasses.replace(
            delta, execution_id="other", step_id="x", text=Untrusted("changed", origin="llm-reasoning:x")
        )

    _run(_config(store, journal_dir, sink, reroute))
    (delta,) = sink.deltas
    assert (delta.execution_id, delta.step_id, delta.text.origin) == ("g-1", "s", "llm-reasoning:s")
    assert delta.text.text == "changed"


def test_a_guard_may_suppress(store, journal_dir, sink):
    def no_email(delta: ReasoningDelta) -> ReasoningDelta | None:
        return None if "@" in delta.text.text else delta

    _run(_config(store, journal_dir, sink, no_email), chunks=4)
    assert sink.deltas and all("@" not in d.text.text for d in sink.deltas)
    assert len(sink.deltas) < 4


def test_a_failing_guard_suppresses_and_is_logged_once(store, journal_dir, sink, caplog):
    caplog.set_level(logging.DEBUG)

    def broken(delta: ReasoningDelta) -> ReasoningDelta:
        raise ValueError(delta.text.text)

    def wrong(delta: ReasoningDelta) -> str:
        return delta.text.text

    streamed, telemetry = _run(_config(store, journal_dir, sink, broken), chunks=3)
    _run(_config(store, journal_dir, sink, wrong), chunks=3)
    assert streamed.thinking == THINKING and telemetry.spans[0].events
    assert sink.deltas == []
    assert len([r for r in caplog.records if "delta guard failed" in r.getMessage()]) <= 1
    assert "ana@example.org" not in caplog.text


def test_inspects_output_refuses_live_delivery_for_the_whole_call(store, journal_dir, sink, hub):
    calls = []

    class Classifier:
        inspects_output = True

        def __call__(self, delta: ReasoningDelta) -> ReasoningDelta:
            calls.append(delta)
            return delta

    config = ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=hub, delta_guards=[Classifier()])
    for mode in ANTHROPIC:
        streamed, telemetry = _run(config, mode, chunks=3)
        assert streamed.thinking == THINKING  # the call still succeeds
        (span,) = telemetry.spans
        assert [e.name for e in span.events] == ["loom.reasoning.captured"]  # and is captured
    assert calls == []
    assert hub.partial("g-1", "s") is None
    (part,) = read_reasoning(journal_dir, store, execution_id="g-1", step_id="s").parts[-1:]
    assert part.text is not None and part.text.text == THINKING
