"""Gemini continuation rules the scenario table does not cover: one reading of every spelling, blocks
never seen left alone, the application's history never written to."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

from google.genai import types

from loom_otel.core import MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.instrumentation.google_genai._transcript import read_contents, views
from loom_otel.testing import instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.continuation.gemini.modes import MODES, user
from tests.continuation.gemini.scenario import NEXT, config, run_loop

SIGNATURE = bytes(range(250, 256)) + b"\xfb\xff\xfe" * 7  # '+' and '/' in standard base64


def _spellings() -> list[Any]:
    call: dict[str, Any] = {"name": "get_weather", "args": {"city": "Lyon", "days": 2}}
    std = base64.b64encode(SIGNATURE).decode()
    url = base64.urlsafe_b64encode(SIGNATURE).decode()
    assert std != url
    return [
        types.Content(
            role="model",
            parts=[
                types.Part(text="Thinking.", thought=True),
                types.Part(function_call=types.FunctionCall(**call), thought_signature=SIGNATURE),
            ],
        ),
        {
            "role": "model",
            "parts": [{"text": "Thinking.", "thought": True}, {"functionCall": call, "thoughtSignature": std}],
        },
        {
            "role": "model",
            "parts": [{"text": "Thinking.", "thought": True}, {"function_call": call, "thought_signature": url}],
        },
    ]


def test_every_spelling_reads_the_same() -> None:
    read = [views(read_contents([user("Weather?"), content]) or [])[0] for content in _spellings()]
    first = read[0]
    for other in read[1:]:
        assert [v.head for v in other] == [v.head for v in first]
        assert [
            [i if isinstance(i, bytes) else (i.key, i.canon, i.text, i.droppable) for i in v.items] for v in other
        ] == [[i if isinstance(i, bytes) else (i.key, i.canon, i.text, i.droppable) for i in v.items] for v in first]
    (_, model) = first
    assert [type(i).__name__ for i in model.items] == ["Block", "bytes", "Block"]
    signature = model.items[2]
    assert not isinstance(signature, bytes) and signature.droppable is False


def _config(tmp_path: Path, **kw: Any) -> ReasoningConfig:
    return ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", **kw)


def test_blocks_never_seen_are_left_alone(tmp_path: Path) -> None:
    sim = Simulator(strict=True)
    _, final, _ = run_loop("sync", sim, config())  # produced without loom-otel: no recorded bindings
    edited = [user("Umbrella for Lyon on Friday?"), *final[1:]]
    with instrumented(GoogleGenAiInstrumentor(), config=_config(tmp_path)) as telemetry:
        MODES["sync"](sim, edited, NEXT, config())
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    sent = sim.requests[-1].body["contents"]
    assert any(p.get("thought") for c in sent for p in c["parts"])  # the unknown thoughts went as they were


def test_application_history_is_never_written_to(tmp_path: Path) -> None:
    canary = "CANARY-gemini-history-5a1c"
    sim = Simulator(strict=True, reasoning_text=canary)
    with instrumented(GoogleGenAiInstrumentor(), config=_config(tmp_path, transcript="redact")), execution("r"):
        _, final, _ = run_loop("chat", sim, config())
        before = copy.deepcopy(final)
        MODES["chat"](sim, final, NEXT, config())
    assert final == before  # rehydration went into copies; the chat's contents are untouched
    assert canary not in repr(final)
    assert canary in str(sim.requests[-1].body)  # while the vendor got the text back
