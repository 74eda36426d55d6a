"""An instrumented Anthropic call, in every call mode, is freed by reference counting (``tests.support.lifetime``)."""

from __future__ import annotations

import pytest

from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request
from tests.support.lifetime import left_to_the_collector

CANARY = "CANARY-5be210-call-lifetime"
SDK_CYCLES = frozenset({"beta.stream", "async_messages.stream"})
"""Helper streams the SDK itself leaves to the collector (the stream and its own iterator generator
refer to each other until the generator is finished); the call hanging under one goes with it.
``test_stream_lifetime`` checks that loom-otel adds no cycle of its own to the helpers."""


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", sorted(set(MODES) - SDK_CYCLES))
def test_a_call_leaves_nothing_to_the_collector(mode, transcript, config, journal_dir):
    sim = Simulator(reasoning_text=f"Check the forecast first. {CANARY}")
    config = type(config)(store=config.store, journal=journal_dir, transcript=transcript)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        left = left_to_the_collector(lambda: MODES[mode](sim, request()))
    assert left == []
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.kind"] == ("summary",)
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir]) == []
