"""The discard check (ADR D7 "direct-path check"), at the Gemini seam in every call mode: a framework
that sends the history back without the thoughts (and their signatures) every turn gets one warning
naming its call site and what happened; ``LOOM_OTEL_REQUIRE_CONTINUATION=true`` makes it an error before
anything is sent."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from google.genai import types

from loom_otel.core import LoomOtelWarning, ReasoningConfig, ReasoningContinuationError
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.continuation.gemini import modes
from tests.continuation.gemini.modes import MODES
from tests.continuation.gemini.scenario import config

CANARY = "CANARY-gemini-discard-0c4e"
QUESTIONS = ("Umbrella for Lyon?", "And for Paris?", "And for Nice?")


def _without_thoughts(history: list[Any]) -> list[Any]:
    """What a framework that keeps only the answer text sends back."""
    out = []
    for content in history:
        if content.role != "model":
            out.append(content)
            continue
        parts = [types.Part(text=p.text) for p in content.parts or () if p.text and not p.thought]
        if parts:
            out.append(types.Content(role="model", parts=parts))
    return out


def _conversation(mode: str, sim: Simulator, *, strip: bool) -> None:
    history: list[Any] = []
    cfg = config(tools=())
    for question in QUESTIONS:
        history, _ = MODES[mode](sim, history, question, cfg)
        if strip:
            history = _without_thoughts(history)


def _discard_warnings(caught: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in caught if "sent back none of the reasoning" in str(w.message)]


@pytest.mark.parametrize("mode", list(MODES))
def test_a_framework_that_strips_thoughts_every_turn_is_warned_once(mode, store, journal_dir):
    sim = Simulator(reasoning_text=f"Think first. {CANARY}", stream_chunks=3)
    settings = ReasoningConfig(store=store, journal=journal_dir)
    with instrumented(GoogleGenAiInstrumentor(), config=settings), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _conversation(mode, sim, strip=False)  # sends its thoughts back: nothing to say
        assert _discard_warnings(caught) == []
        _conversation(mode, sim, strip=True)
        _conversation(mode, sim, strip=True)  # once per process
    (warning,) = _discard_warnings(caught)
    message = str(warning.message)
    assert warning.category is LoomOtelWarning and warning.filename == modes.__file__  # the call site
    assert f"{modes.__file__}:{warning.lineno}" in message and "two consecutive turns" in message
    assert "dropped: not a tool round" in message
    assert find_leaks([CANARY], texts=[str(w.message) for w in caught]) == []


@pytest.mark.parametrize("mode", list(MODES))
def test_require_continuation_refuses_a_request_whose_thoughts_would_be_dropped(mode, store, journal_dir, monkeypatch):
    monkeypatch.setenv("LOOM_OTEL_REQUIRE_CONTINUATION", "true")
    sim = Simulator(reasoning_text=f"Think first. {CANARY}", stream_chunks=3)
    cfg = config(tools=())
    with instrumented(GoogleGenAiInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)):
        history, _ = MODES[mode](sim, [], QUESTIONS[0], cfg)
        sent = len(sim.requests)
        with pytest.raises(ReasoningContinuationError, match="LOOM_OTEL_REQUIRE_CONTINUATION") as info:
            MODES[mode](sim, _without_thoughts(history), QUESTIONS[1], cfg)
    assert len(sim.requests) == sent  # nothing was sent
    assert find_leaks([CANARY], texts=[str(info.value)]) == []
