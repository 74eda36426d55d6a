"""Live deltas reach only the sink and the SSE stream: never spans, events, the journal or logs."""

from __future__ import annotations

import logging

import pytest

from loom_otel.core import LoomOtelWarning, ReasoningConfig, execution, step
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import flush_live, register_sink
from loom_otel.live.asgi import create_app
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.live.modes import ANTHROPIC, anthropic_request
from tests.live.sse import SseReader
from tests.live.viewers import ALICE_NO_TENANT, authenticator

CANARY = "CANARY-live-only-9e2c51"


def test_live_deltas_reach_only_the_sink_and_the_sse_stream(hub, sink, journal_dir, tmp_path, serve, caplog):
    caplog.set_level(logging.DEBUG)
    sim = Simulator(reasoning_text=f"Thinking it through. {CANARY} Done thinking.", stream_chunks=1)
    seen: list[object] = []

    def observer_and_sink(delta):
        seen.append(delta)
        sink(delta)

    # No store: nothing readable is kept, so the live view is the only place the text may go.
    config = ReasoningConfig(journal=journal_dir, live=True, on_reasoning=hub)
    server = serve(create_app(hub, authenticator=authenticator(), keepalive=0.5))
    unregister = register_sink(observer_and_sink)
    try:
        with (
            pytest.warns(LoomOtelWarning, match="no reasoning store"),
            instrumented(AnthropicInstrumentor(), config=config) as telemetry,
        ):
            with execution("canary-1", principal="alice"), step("think"):
                with SseReader(f"{server.url}/executions/canary-1/reasoning", ALICE_NO_TENANT) as r:
                    assert r.status == 404  # nothing known yet: the same 404 as anyone else
                for mode in ANTHROPIC:
                    ANTHROPIC[mode](sim, anthropic_request())
                assert flush_live()
                with SseReader(f"{server.url}/executions/canary-1/reasoning", ALICE_NO_TENANT) as r:
                    assert r.status == 200
                    ANTHROPIC["messages.stream()"](sim, anthropic_request())
                    ((_, replayed),) = r.until("done")  # the previous call's end, told on attach
                    assert replayed["kept"] is False
                    events = r.until("done")
    finally:
        unregister()
    assert flush_live()

    assert CANARY in sink.text()  # positive control: the sink got it ...
    assert events[0] == ("reset", {"execution": "canary-1", "step": "think"})
    assert CANARY in "".join(d["text"] for n, d in events if n == "reasoning")  # ... and the SSE stream did
    leaks = find_leaks(
        [CANARY], spans=telemetry.spans, directories=[journal_dir, tmp_path / "state"], texts=[caplog.text]
    )
    assert leaks == []
    assert all(CANARY not in repr(d) and CANARY not in str(d) for d in seen)
