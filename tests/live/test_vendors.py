"""The live sink for Gemini and OpenAI streaming modes: deltas equal the captured text."""

from __future__ import annotations

import pytest

from loom_otel.audit import read_reasoning
from loom_otel.core import execution, step
from loom_otel.live import flush_live
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator

THOUGHT = "CANARY-live-vendor: the user wants the weather, so I look it up before answering."


def _captured(journal_dir, store, execution_id: str) -> str:
    reading = read_reasoning(journal_dir, store, execution_id=execution_id, step_id="s")
    return "".join(p.text.text for p in reading.parts if p.text is not None)


@pytest.mark.parametrize("mode", ["stream", "async_stream", "chat_stream", "async_chat_stream"])
def test_gemini_streaming_modes(mode, live_config, sink, store, journal_dir):
    from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
    from tests.google_genai.helpers import run

    sim = Simulator(reasoning_text=THOUGHT, stream_chunks=5)
    with instrumented(GoogleGenAiInstrumentor(), config=live_config), execution(f"gem-{mode}"), step("s"):
        outcome = run(mode, sim.genai_client())
    assert flush_live()
    assert sink.deltas and {d.provider for d in sink.deltas} == {"gcp.gemini"}
    assert sink.text() == _captured(journal_dir, store, f"gem-{mode}") == outcome.thought_text
    answer = "".join(
        p.text or "" for i in outcome.items for c in i.candidates or () for p in c.content.parts or () if not p.thought
    )
    assert answer and answer not in sink.text() and "CANARY" not in answer


@pytest.mark.parametrize(("api", "mode"), [(a, m) for a in ("chat", "responses") for m in ("stream", "async_stream")])
def test_openai_streaming_modes(api, mode, live_config, sink, store, journal_dir):
    from loom_otel.instrumentation.openai import OpenAiInstrumentor
    from tests.openai.helpers import run

    sim = Simulator(reasoning_text=THOUGHT, stream_chunks=5)

    def make(is_async: bool):
        return sim.async_openai_client() if is_async else sim.openai_client()

    with instrumented(OpenAiInstrumentor(), config=live_config), execution(f"oai-{api}-{mode}"), step("s"):
        seen = run(api, mode, make)
    assert flush_live()
    assert sink.deltas and all(d.step_id == "s" for d in sink.deltas)
    assert sink.text() == _captured(journal_dir, store, f"oai-{api}-{mode}") == seen
