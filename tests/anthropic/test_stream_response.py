"""A streamed reply is recorded as the same reply sent whole: the stream accumulator reads the
``message_start`` message and the ``message_delta`` events the way ``response_info`` reads a message."""

from __future__ import annotations

import logging

import pytest

from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request

CANARY = "CANARY-5e21d0-streamed-thinking"
RESPONSE = ("gen_ai.response.", "gen_ai.usage.")
CACHED = [  # a prompt-cache breakpoint: the first request writes the cache, the second reads it
    {"role": "user", "content": [{"type": "text", "text": "Pack for Lyon?", "cache_control": {"type": "ephemeral"}}]}
]


def _response_attributes(span) -> dict[str, object]:
    return {k: v for k, v in span.attributes.items() if k.startswith(RESPONSE) and k != "gen_ai.response.id"}


@pytest.mark.parametrize("mode", ["stream", "async_stream", "messages.stream", "async_messages.stream"])
def test_a_streamed_reply_records_what_the_same_reply_sent_whole_records(mode, config, journal_dir, caplog):
    """Twice each: the second request of a kind reads the simulator's prompt cache, so the start
    message's usage (cache read) and the final delta's usage (output, thinking tokens) must both count
    (``messages.stream()``: its snapshot, which before anthropic 1 keeps no thinking tokens, and the delta)."""
    caplog.set_level(logging.DEBUG)
    whole, streamed = Simulator(reasoning_text=CANARY), Simulator(reasoning_text=CANARY)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        complete = [MODES["sync"](whole, request(messages=CACHED)) for _ in range(2)]
        messages = [MODES[mode](streamed, request(messages=CACHED)) for _ in range(2)]
    spans = [s for s in telemetry.spans if s.name.startswith("chat")]
    assert len(spans) == 4
    by_whole, by_stream = spans[:2], spans[2:]

    assert by_stream[0].attributes["gen_ai.usage.cache_creation.input_tokens"] > 0
    assert by_stream[1].attributes["gen_ai.usage.cache_read.input_tokens"] > 0
    assert by_stream[0].attributes["gen_ai.usage.reasoning.output_tokens"] > 0
    for whole_span, stream_span in zip(by_whole, by_stream, strict=True):
        assert _response_attributes(stream_span) == _response_attributes(whole_span)
        assert stream_span.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert [s.attributes["gen_ai.response.id"] for s in by_stream] == [m.id for m in messages]
    assert [s.attributes["gen_ai.response.id"] for s in by_whole] == [m.id for m in complete]

    for span in by_stream:
        (event,) = reasoning_events([span])
        assert event["loom.reasoning.part.kind"] == ("summary",)
    signatures = [b.signature for m in messages for b in m.content if b.type == "thinking"]
    leaks = find_leaks([CANARY, *signatures], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text])
    assert leaks == []
