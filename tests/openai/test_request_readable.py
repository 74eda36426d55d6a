"""``LOOM_OTEL_REQUEST_READABLE=summarized`` on the OpenAI Responses API: ``reasoning`` without a
``summary`` is sent with ``summary: "auto"``, the summaries are kept and taken out of what the
application gets; the strict simulator accepts every later request. Differential: the same script,
bare and instrumented, in every call mode."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from loom_otel.core import LoomOtelWarning, ReasoningConfig
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.instrumentation.openai._readable import readable_reasoning
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.openai.helpers import MODES, RESPONSES_MODEL, respond

CANARY = "CANARY-readable-openai-3b9e"
TOOLS = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
_MASKED = frozenset({"id", "call_id", "encrypted_content"})


def _sim() -> Simulator:
    return Simulator(reasoning_text=f"Compare the fares first. {CANARY}", stream_chunks=3)


def _script(sim: Simulator, mode: str, events: list[Any]) -> list[Any]:
    """A function call, its output, then a next turn, the application keeping every output item."""
    items: list[Any] = [{"role": "user", "content": "Which fare is cheaper?"}]
    received = []
    for _ in range(3):
        response = respond(
            sim,
            mode,
            {"model": RESPONSES_MODEL, "input": list(items), "reasoning": {"effort": "high"}, "tools": TOOLS},
            events,
        )
        received.append(response)
        items += [o.model_dump(exclude_none=True) for o in response.output]
        calls = [o for o in response.output if o.type == "function_call"]
        if calls:
            items.append({"type": "function_call_output", "call_id": calls[0].call_id, "output": "12 EUR"})
        else:
            items.append({"role": "user", "content": "And the return?"})
    return received


def _view(responses: list[Any]) -> list[Any]:
    seen: dict[str, int] = {}

    def mask(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: mask(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [mask(v) for v in value]
        if key in _MASKED and isinstance(value, str):
            return f"<{key} {seen.setdefault(value, len(seen))}>"
        return value

    return [mask(r.model_dump(mode="json", exclude_none=True, exclude={"output_parsed"})) for r in responses]


def _events_view(events: list[Any]) -> list[Any]:
    return [(e.type, e.sequence_number) for e in events]


@pytest.mark.parametrize("mode", MODES)
def test_the_app_sees_the_bare_run_and_the_summaries_are_kept(mode, store, journal_dir, caplog):
    caplog.set_level(logging.DEBUG, logger="loom_otel")
    bare_sim, bare_events = _sim(), []
    bare = _script(bare_sim, mode, bare_events)
    sim, events = _sim(), []
    config = ReasoningConfig(store=store, journal=journal_dir, request_readable="summarized")
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        received = _script(sim, mode, events)

    assert _view(received) == _view(bare)
    assert all(o.summary == [] for r in received for o in r.output if o.type == "reasoning")
    assert [r.body["reasoning"] for r in sim.requests] == [{"effort": "high", "summary": "auto"}] * 3
    assert [r.body["reasoning"] for r in bare_sim.requests] == [{"effort": "high"}] * 3
    sent_items = [i for r in sim.requests for i in r.body["input"] if i.get("type") == "reasoning"]
    assert len(sent_items) == 3 and all(i["summary"] == [] for i in sent_items)  # sent as the app holds them
    assert _events_view(events) == _events_view(bare_events)  # a stream's events: the bare stream's
    assert find_leaks([CANARY], texts=[repr(received), repr(events), *map(str, _view(received))]) == []
    events_ = reasoning_events(telemetry.spans)
    assert len(events_) == 3
    for event in events_:
        assert event["loom.reasoning.part.kind"] == ("summary",)
        (ref,) = event["loom.reasoning.part.ref"]
        assert CANARY in (store.get(ref, tenant=None, execution_id=event["loom.execution.id"]) or b"").decode()
        assert event["loom.request.readable"] == "summarized"
        assert event["loom.request.thinking.effort"] == "high"
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text]) == []


def test_a_request_with_a_summary_is_sent_as_it_is(store, journal_dir):
    sim = _sim()
    config = ReasoningConfig(store=store, journal=journal_dir, request_readable="summarized")
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        response = sim.openai_client().responses.create(
            model=RESPONSES_MODEL, input="Hi", reasoning={"effort": "low", "summary": "concise"}
        )
    assert CANARY in response.output[0].summary[0].text
    (event,) = reasoning_events(telemetry.spans)
    assert "loom.request.readable" not in event and event["loom.request.thinking.display"] == "concise"


def test_the_reasoning_asked_for_is_a_copy():
    kwargs = {"reasoning": {"effort": "medium"}}
    assert readable_reasoning(kwargs) == {"effort": "medium", "summary": "auto"}
    assert kwargs == {"reasoning": {"effort": "medium"}}
    assert readable_reasoning({"reasoning": {"summary": "detailed"}}) is None and readable_reasoning({}) is None


def test_items_without_a_summary_warn_once_naming_the_setting(store, journal_dir):
    sim = _sim()
    with pytest.warns(LoomOtelWarning, match="LOOM_OTEL_REQUEST_READABLE") as caught:
        with instrumented(OpenAiInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)):
            for _ in range(2):
                sim.openai_client().responses.create(model=RESPONSES_MODEL, input="Hi", reasoning={"effort": "low"})
    assert len([w for w in caught if "REQUEST_READABLE" in str(w.message)]) == 1
