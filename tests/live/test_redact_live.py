"""The live view under ``transcript="redact"``: each streamed event is taken apart for capture and
the live sink first, then its thinking is blanked, so the sink gets every delta in order while the
application never holds readable thinking."""

from __future__ import annotations

import logging

import pytest

from loom_otel.audit import PartStatus, read_reasoning
from loom_otel.core import ReasoningConfig, execution, step
from loom_otel.core._calls._withheld import WITHHELD
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import flush_live
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.live.modes import ANTHROPIC, anthropic_request

CANARY = "CANARY-live-redact-90c2"
THINKING = f"The forecast for Lyon says rain after noon. {CANARY} So the umbrella goes in the bag."


@pytest.mark.parametrize("mode", list(ANTHROPIC))
def test_the_sink_gets_every_delta_in_order_and_the_application_none(mode, sink, store, journal_dir, caplog):
    caplog.set_level(logging.DEBUG, logger="loom_otel")  # (the SDK loggers at DEBUG would log request bodies)
    sim = Simulator(reasoning_text=THINKING, stream_chunks=7)
    config = ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=sink, transcript="redact")
    with (
        instrumented(AnthropicInstrumentor(), config=config) as telemetry,
        execution("run-r", tenant="acme", principal="alice", owner="olga"),
        step("plan"),
    ):
        streamed = ANTHROPIC[mode](sim, anthropic_request())
    assert flush_live()

    assert streamed.thinking == WITHHELD  # blanked in every event the application received (a placeholder)
    assert [d.seq for d in sink.deltas] == list(range(1, 8))
    assert [d.block_index for d in sink.deltas] == [0] * 7
    assert sink.text() == THINKING

    reading = read_reasoning(journal_dir, store, execution_id="run-r", step_id="plan", tenant="acme")
    (part,) = reading.parts
    assert part.status is PartStatus.OK and part.text is not None and part.text.text == THINKING

    assert CANARY not in streamed.answer and all(CANARY not in t for t in streamed.text_deltas)
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text]) == []
