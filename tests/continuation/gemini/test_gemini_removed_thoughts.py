"""Redact mode with a framework that discards the thought parts loom-otel emptied (pydantic-ai drops a
thought part with no text): the thought run comes back from the store before the signed part it belongs
to, so nothing the vendor bound is missing and nothing is dropped (issue #11 item 4: no false drops)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.genai import types

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.continuation.gemini.modes import MODES
from tests.continuation.gemini.scenario import QUESTION, answers, config

CANARY = "CANARY-removed-thoughts-0b5e"


def _without_empty_thoughts(history: list[Any]) -> list[Any]:
    """What pydantic-ai sends back: its model messages without the thought parts that have no text (and
    without a content left with no part)."""
    out = []
    for content in history:
        parts = [p for p in content.parts or () if not (p.thought and not p.text)]
        if parts:
            out.append(types.Content(role=content.role, parts=parts))
    return out


@pytest.mark.parametrize("mode", list(MODES))
def test_thoughts_a_framework_removed_are_put_back_and_nothing_is_dropped(mode: str, tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=2, stream_chunks=3)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact")
    send, cfg = MODES[mode], config()
    with instrumented(GoogleGenAiInstrumentor(), config=settings) as telemetry:
        history, _ = send(sim, [], QUESTION, cfg)
        for message in (answers(history), answers(history), "And tomorrow?"):
            history, _ = send(sim, _without_empty_thoughts(history), message, cfg)
            if isinstance(message, str):
                break
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    later = sim.requests[1:]
    thoughts = [
        "".join(p.get("text", "") for c in r.body["contents"] for p in c["parts"] if p.get("thought")) for r in later
    ]
    assert later and all(CANARY in t for t in thoughts)  # the vendor got the thought text back every time
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path]) == []
    assert find_leaks([CANARY], texts=[c.model_dump_json() for c in history]) == []
