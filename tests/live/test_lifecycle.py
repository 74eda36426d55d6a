"""Completion signals: the hub's buffer is cleared however the call ends; the public surface."""

from __future__ import annotations

import gc
import importlib

import anthropic
import pytest

from loom_otel.core import ReasoningConfig, execution, step
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import Viewer, flush_live
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator
from tests.live.modes import anthropic_request

ALICE = Viewer("alice")


@pytest.fixture
def config(store, journal_dir, hub) -> ReasoningConfig:
    return ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=hub)


def test_a_failed_stream_clears_the_buffer(config, hub):
    sim = Simulator(reasoning_text="partial thoughts before the cut", stream_chunks=6)
    sim.break_stream_after(5)
    with instrumented(AnthropicInstrumentor(), config=config), execution("cut-1", principal="alice"), step("s"):
        with (
            pytest.raises(anthropic.APIStatusError),
            sim.anthropic_client().messages.stream(**anthropic_request()) as s,
        ):
            s.get_final_message()
    assert flush_live()
    assert hub.partial("cut-1", "s") is None
    done = hub.ended_step("cut-1", "s", ALICE)
    assert done is not None and done.outcome == "failed" and done.kept is False and done.streamed


def test_an_abandoned_stream_clears_the_buffer(config, hub):
    sim = Simulator(reasoning_text="thoughts nobody finished reading", stream_chunks=6)
    with instrumented(AnthropicInstrumentor(), config=config), execution("gone-1", principal="alice"), step("s"):
        stream = sim.anthropic_client().messages.create(stream=True, **anthropic_request())
        for _ in range(4):
            next(stream)
        assert flush_live()
        assert hub.partial("gone-1", "s") is not None
        del stream
        gc.collect()
    assert flush_live()
    assert hub.partial("gone-1", "s") is None
    done = hub.ended_step("gone-1", "s", ALICE)
    assert done is not None and done.outcome == "abandoned"


def test_closed_early_keeps_what_was_received(config, hub):
    sim = Simulator(reasoning_text="thoughts", stream_chunks=4)
    with instrumented(AnthropicInstrumentor(), config=config), execution("early-1", principal="alice"), step("s"):
        with sim.anthropic_client().messages.create(stream=True, **anthropic_request()) as stream:
            for _ in range(3):
                next(stream)
    assert flush_live()
    done = hub.ended_step("early-1", "s", ALICE)
    assert done is not None and done.kept is True and hub.partial("early-1", "s") is None


@pytest.mark.parametrize("name", ["loom_otel.live", "loom_otel.live.asgi", "loom_otel.core"])
def test_public_surface(name):
    module = importlib.import_module(name)
    assert list(module.__all__) == sorted(module.__all__)
    assert all(hasattr(module, member) for member in module.__all__)


def test_core_loads_without_the_live_view():
    """Core never imports the live view (ARCHITECTURE.md): its names are ``loom_otel.live``'s alone."""
    import subprocess
    import sys

    code = "import sys, loom_otel.core; print(sorted(m for m in sys.modules if m.startswith('loom_otel.live')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
    from loom_otel import core, live

    assert not hasattr(core, "ReasoningDelta") and {"LiveReasoningHub", "ReasoningDelta", "TextDelta"} <= set(
        live.__all__
    )


def test_flush_waits_for_an_uninstrumented_channel(store, journal_dir):
    """What a slow sink still has to deliver when the instrumentor is uninstrumented (and its channel
    collected) is waited for by ``flush_live``: nothing offered is left behind at shutdown."""
    import time

    received: list[object] = []

    def slow(delta: object) -> None:
        time.sleep(0.05)
        received.append(delta)

    sim = Simulator(reasoning_text="one two three four five six", stream_chunks=6)
    config = ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=slow)
    with instrumented(AnthropicInstrumentor(), config=config), execution("slow-1"):
        with sim.anthropic_client().messages.create(stream=True, **anthropic_request()) as stream:
            for _ in stream:
                pass
    del stream
    gc.collect()  # the handler and its live channel are gone; the hand-off's worker is not
    assert len(received) < 6
    assert flush_live()
    assert len(received) == 6
