"""Redact mode under a framework that drops reasoning it sees no text in: every Responses reasoning piece
the application is handed carries ``WITHHELD`` (a stream's first delta of a piece carries it), so the item
survives the filter and the stored text replaces it on the way out: the vendor receives what the bare run
sends. Zero code (no ``execution()``), every call mode, the strict simulator binding each
``encrypted_content`` to the summaries before it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.core.vendor_helpers import WITHHELD
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.openai.helpers import CHAT_MODEL, MODES, RESPONSES_MODEL, STREAMING, THOUGHT, respond, run

CANARY = "CANARY-placeholder-openai-7c2a"
TOOLS = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
ROUNDS = 2


def _sim() -> Simulator:
    return Simulator(
        strict=True, reasoning_text=f"Compare the fares first. {CANARY}", stream_chunks=3, max_tool_rounds=ROUNDS
    )


def _filtered(item: dict[str, Any]) -> dict[str, Any] | None:
    """An output item as a framework keeps it: summary parts without text dropped, and a reasoning item
    left with none dropped whole."""
    if item.get("type") != "reasoning":
        return item
    summary = [s for s in item.get("summary") or () if s.get("text")]
    return {**item, "summary": summary} if summary else None


def _loop(sim: Simulator, mode: str, events: list[Any], *, filtering: bool) -> list[Any]:
    items: list[Any] = [{"role": "user", "content": "Which fare is cheaper?"}]
    kw = {
        "model": RESPONSES_MODEL,
        "tools": TOOLS,
        "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "store": False,
    }
    received = []
    for _ in range(ROUNDS + 1):
        response = respond(sim, mode, {**kw, "input": list(items)}, events)
        received.append(response)
        for output in response.output:
            item = output.model_dump(exclude_none=True)
            kept = _filtered(item) if filtering else item
            if kept is not None:
                items.append(kept)
        calls = [o for o in response.output if o.type == "function_call"]
        if not calls:
            break
        items.append({"type": "function_call_output", "call_id": calls[0].call_id, "output": "12 EUR"})
    return received


@pytest.mark.parametrize("mode", MODES)
def test_a_framework_that_drops_empty_reasoning_keeps_it_in_redact_mode(mode, tmp_path):
    bare = _sim()
    _loop(bare, mode, [], filtering=False)
    sim, events = _sim(), list[Any]()
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact")
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        received = _loop(sim, mode, events, filtering=True)

    # The vendor received what the bare application sends: every reasoning item, its summary text ...
    assert len(sim.requests) == len(bare.requests) == ROUNDS + 1
    assert [r.body for r in sim.requests] == [r.body for r in bare.requests]
    assert all(not r.input_transformations for r in received)
    sent = json.dumps([r.body for r in sim.requests])
    assert CANARY in sent and WITHHELD not in sent
    # ... the application held the placeholder, never the text (a stream's deltas add up to it).
    held = [s.text for r in received for o in r.output if o.type == "reasoning" for s in o.summary]
    assert len(held) == ROUNDS + 1 and set(held) == {WITHHELD}
    if mode in STREAMING:
        deltas = [e.delta for e in events if e.type == "response.reasoning_summary_text.delta"]
        assert "".join(deltas) == WITHHELD * (ROUNDS + 1)
    visible = [*(r.model_dump_json(warnings=False) for r in received), *(e.model_dump_json() for e in events)]
    assert find_leaks([CANARY], texts=visible, spans=telemetry.spans, directories=[tmp_path / "journal"]) == []
    assert reasoning_events(telemetry.spans, "loom.reasoning.vendor_dropped") == []


def test_a_placeholder_with_no_text_to_put_back_goes_out_empty(tmp_path):
    """An item the rule cannot put text back into (its record is gone: another process, no journal)
    goes out with empty texts, as before the placeholder: the vendor never gets ``WITHHELD``."""
    sim = _sim()
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact")
    with instrumented(OpenAiInstrumentor(), config=config):
        (first,) = _loop(sim, "sync", [], filtering=False)[:1]
    items = [
        {"role": "user", "content": "Which fare is cheaper?"},
        *(o.model_dump(exclude_none=True) for o in first.output),
    ]
    assert any(WITHHELD in json.dumps(i) for i in items)
    items.append({"role": "user", "content": "And the return?"})
    other = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "other", transcript="redact")
    with instrumented(OpenAiInstrumentor(), config=other):
        sim.openai_client().responses.create(model=RESPONSES_MODEL, input=items, store=False)
    sent = json.dumps(sim.requests[-1].body)
    assert WITHHELD not in sent and '"summary_text"' in sent


@pytest.mark.parametrize("mode", MODES)
def test_chat_hands_the_placeholder_and_never_sends_it(mode, sim, make, store, journal_dir):
    """Chat Completions: the application gets ``WITHHELD`` for the reasoning (a stream's first reasoning
    delta carries it); sent back outside ``execution()`` (no lineage: nothing to put back) the placeholder
    is taken out, as the message went before."""
    config = ReasoningConfig(store=store, journal=journal_dir, transcript="redact")
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        seen = run("chat", mode, make)
        field = sim.script.reasoning_field
        held = {"role": "assistant", "content": "The bus.", field: seen}
        messages = [{"role": "user", "content": "Which is cheaper?"}, held, {"role": "user", "content": "Why?"}]
        make(False).chat.completions.create(model=CHAT_MODEL, messages=messages)
    assert seen == WITHHELD
    assert sim.requests[-1].body["messages"][1] == {"role": "assistant", "content": "The bus."}
    assert find_leaks([THOUGHT], spans=telemetry.spans, directories=[journal_dir]) == []
