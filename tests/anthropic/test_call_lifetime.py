"""An instrumented Anthropic call, in every call mode, is freed by reference counting (``tests.support.lifetime``)."""

from __future__ import annotations

import pytest

from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request
from tests.support.lifetime import left_to_the_collector

CANARY = "CANARY-5be210-call-lifetime"


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_call_leaves_nothing_to_the_collector(mode, transcript, config, journal_dir):
    sim = Simulator(reasoning_text=f"Check the forecast first. {CANARY}")
    config = type(config)(store=config.store, journal=journal_dir, transcript=transcript)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        left = left_to_the_collector(lambda: MODES[mode](sim, request()))
    assert left == []
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.kind"] == ("text",)
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir]) == []
