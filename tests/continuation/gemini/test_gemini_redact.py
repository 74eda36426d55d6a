"""``transcript="redact"`` for Gemini: the application (responses, chunks, chat history,
``model_dump_json()``) never holds readable thought text, and the strict simulator still accepts a
five-step tool turn, where each step's signature is bound to the earlier steps' thoughts exactly as
they were produced (so a wrong rehydration, or a wrong split over streamed parts, is a 400)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from loom_otel.core import LoomOtelWarning, MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.continuation.gemini.modes import MODES
from tests.continuation.gemini.scenario import QUESTION, answers, config, signatures

CANARY = "CANARY-gemini-redact-61c0"
ROUNDS = 5


def _dump(obj: Any) -> str:
    return obj.model_dump_json() if hasattr(obj, "model_dump_json") else json.dumps(obj, default=str)


def _simulator() -> Simulator:
    return Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=ROUNDS, stream_chunks=3)


def _turn(mode: str, sim: Simulator) -> tuple[list[Any], list[Any]]:
    send = MODES[mode]
    cfg = config()
    history, seen = send(sim, [], QUESTION, cfg)
    for _ in range(ROUNDS):
        history, items = send(sim, history, answers(history), cfg)
        seen += items
    return history, seen


@pytest.mark.parametrize("mode", list(MODES))
def test_five_step_turn_app_never_sees_thoughts(mode: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    sim = _simulator()
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact")
    # DEBUG everywhere: the SDKs log request bodies, which loom-otel says once (it cannot reach them).
    debug = pytest.warns(LoomOtelWarning, match="log at DEBUG")
    with debug, instrumented(GoogleGenAiInstrumentor(), config=settings) as telemetry, execution("run-redact"):
        history, seen = _turn(mode, sim)
    bare = _simulator()
    _turn(mode, bare)
    # The vendor received exactly what it gets from the bare SDK (thought text split as it came).
    assert [r.body for r in sim.requests] == [r.body for r in bare.requests]
    last = history[-1]
    assert last.role == "model" and not any(p.function_call for p in last.parts)  # the turn finished
    assert len(sim.requests) == ROUNDS + 1
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    captured = reasoning_events(telemetry.spans)  # the evidence was kept before the app's copy was blanked
    assert len(captured) == ROUNDS + 1 and all(all(e["loom.reasoning.part.ref"]) for e in captured)
    # The vendor got the thought text back, as produced, in every later request ...
    for request in sim.requests[1:]:
        thoughts = "".join(
            p["text"] for c in request.body["contents"] if c["role"] == "model" for p in c["parts"] if p.get("thought")
        )
        assert thoughts.count(CANARY) == len([c for c in request.body["contents"] if c["role"] == "user"]) - 1
    # ... while the application never held it.
    visible = [*(_dump(i) for i in seen), *(_dump(c) for c in history), caplog.text]
    assert find_leaks([CANARY], texts=visible) == []
    assert find_leaks([CANARY, *signatures(seen)], spans=telemetry.spans, directories=[tmp_path]) == []
    assert any(p.thought for c in history if c.role == "model" for p in c.parts)  # blanked, not removed


@pytest.mark.parametrize("mode", ["sync", "stream", "chat_stream"])
def test_keyed_digests_put_every_thought_back(mode: str, tmp_path: Path) -> None:
    """``LOOM_OTEL_DIGEST=hmac-sha256``: the binding records keep the captured (keyed) digest of each
    thought, so the thoughts are put back exactly, and no plain digest of a text is written anywhere."""
    sim = _simulator()
    settings = ReasoningConfig(
        store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact", digest="hmac-sha256"
    )
    with instrumented(GoogleGenAiInstrumentor(), config=settings) as telemetry, execution("run-keyed"):
        _, seen = _turn(mode, sim)
    bare = _simulator()
    _turn(mode, bare)
    assert [r.body for r in sim.requests] == [r.body for r in bare.requests]
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    thoughts = {
        p["text"]
        for r in bare.requests
        for c in r.body["contents"]
        if c["role"] == "model"
        for p in c["parts"]
        if p.get("thought")
    }
    plain = [hashlib.sha256(t.encode()).hexdigest() for t in thoughts]
    assert (
        thoughts
        and find_leaks([CANARY, *plain, *signatures(seen)], spans=telemetry.spans, directories=[tmp_path]) == []
    )
