"""A raw streaming response (``with_streaming_response.create(stream=True)``) read as lines: the live
view gets each reasoning delta once, as from a parsed stream."""

from __future__ import annotations

import pytest

from loom_otel.core import execution, step
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.live import flush_live
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator
from tests.live.modes import anthropic_request

THINKING = "First I weigh the forecast for Lyon. CANARY-live-raw Then I decide about the umbrella."


@pytest.mark.parametrize("vendor", ["anthropic", "openai"])
def test_raw_stream_deltas_delivered_once(vendor, live_config, sink):
    sim = Simulator(reasoning_text=THINKING, stream_chunks=7)
    if vendor == "anthropic":
        instrumentor, resource, kwargs = AnthropicInstrumentor(), sim.anthropic_client().messages, anthropic_request()
    else:
        resource = sim.openai_client().chat.completions
        instrumentor, kwargs = (
            OpenAiInstrumentor(),
            {"model": "deepseek-reasoner", "messages": [{"role": "user", "content": "Hi"}]},
        )
    with instrumented(instrumentor, config=live_config), execution(f"raw-{vendor}"), step("s"):
        with resource.with_streaming_response.create(stream=True, **kwargs) as raw:
            lines = list(raw.iter_lines())
    assert flush_live()
    assert lines
    assert sink.text() == THINKING
    assert len(sink.deltas) == 7
    assert [d.seq for d in sink.deltas] == list(range(1, 8))
    assert len({d.call_id for d in sink.deltas}) == 1
