"""A finished ``messages.stream()`` stream is freed by reference counting, as without loom-otel: the
capture hanging under it forms no reference cycle through the stream (one kept the stream, its raw
stream's proxy and the whole response for the garbage collector, some 70 objects per call)."""

from __future__ import annotations

import gc
import logging

import pytest
from anthropic.lib.streaming import AsyncMessageStream, MessageStream

from loom_otel.core._calls._streams import AsyncStreamProxy, SyncStreamProxy
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request

CANARY = "CANARY-3a7f51-helper-lifetime"
KEPT_BY_A_CYCLE = (MessageStream, AsyncMessageStream, SyncStreamProxy, AsyncStreamProxy)


@pytest.fixture
def sim() -> Simulator:
    return Simulator(reasoning_text=f"Rain is likely in Lyon after noon. {CANARY}")


@pytest.mark.parametrize("mode", ["messages.stream", "async_messages.stream", "beta.stream"])
def test_a_finished_helper_stream_is_freed_without_the_collector(mode, sim, config, journal_dir, caplog):
    caplog.set_level(logging.DEBUG, logger="loom_otel")
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            message = MODES[mode](sim, request())
            gc.collect()
            kept = [type(o).__name__ for o in gc.garbage if isinstance(o, KEPT_BY_A_CYCLE)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    assert kept == []
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.kind"] == ("summary",)
    signature = next(b.signature for b in message.content if b.type == "thinking")
    assert find_leaks([CANARY, signature], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text]) == []
