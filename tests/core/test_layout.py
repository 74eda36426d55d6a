"""``loom.reasoning.layout``: the response's reasoning parts, text blocks and tool calls in vendor order,
each tool call as its id, name and arguments digest, through the real SDKs against the simulator in every
call mode; equal for complete and streamed calls; never the arguments or any text; covered by verify."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from google.genai import types

from loom_otel.audit import verify
from loom_otel.audit._captures import iter_captures
from loom_otel.cli.__main__ import main
from loom_otel.core import FileReasoningStore, ReasoningConfig, execution, step
from loom_otel.core._evidence._canonical import canonical_json, sha256_hex
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._evidence._layout import arguments_digest, describe, parse_layout
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES as ANTHROPIC_MODES
from tests.anthropic.modes import request
from tests.google_genai import helpers as gemini
from tests.openai import helpers as openai_helpers
from tests.support.tools import WEATHER

CANARY = "CANARY-layout-4c1e: I need the weather before I answer."
ARGUMENT = "sim-city"
"""What the simulator puts in a ``city`` argument: it must appear in no record, event or log."""


@pytest.fixture
def sim() -> Simulator:
    return Simulator(reasoning_text=CANARY, stream_chunks=4)


def _capture_records(journal_dir: Path) -> list[dict[str, Any]]:
    return [r for r in iter_records(journal_dir) if r.get("type") == "capture"]


def _shape(layout: Any) -> list[dict[str, Any]]:
    """The layout without tool call ids (the simulator's ids depend on the request body)."""
    return [{k: v for k, v in e.items() if k != "id"} for e in parse_layout(layout)]


def _check(telemetry: Any, journal_dir: Path, caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    (record,) = _capture_records(journal_dir)
    layout = record["attributes"]["loom.reasoning.layout"]
    (event,) = reasoning_events(telemetry.spans)
    assert list(event["loom.reasoning.layout"]) == layout
    (read_back,) = iter_captures(telemetry.spans)  # what a reader of the exported spans gets
    assert list(read_back.layout) == layout
    assert find_leaks([CANARY, ARGUMENT], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text]) == []
    return parse_layout(layout)


def _weather_call(name: str = "get_weather", key: str = "city") -> dict[str, Any]:
    return {"arguments_sha256": sha256_hex(canonical_json({key: f"sim-{key}"})), "name": name, "type": "tool_call"}


@pytest.mark.parametrize("mode", list(ANTHROPIC_MODES))
def test_anthropic_layout_in_every_mode(mode, sim, config, journal_dir, caplog):
    caplog.set_level(logging.DEBUG)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        message = ANTHROPIC_MODES[mode](sim, request(tools=[WEATHER]))

    entries = _check(telemetry, journal_dir, caplog)
    assert _shape([json.dumps(e) for e in entries]) == [
        {"part": 0, "type": "reasoning"},
        {"type": "text"},
        _weather_call(),
    ]
    (tool_use,) = [b for b in message.content if b.type == "tool_use"]
    assert entries[2]["id"] == tool_use.id
    assert entries[2]["arguments_sha256"] == arguments_digest(tool_use.input)
    short = entries[2]["arguments_sha256"][:4]
    assert describe([json.dumps(e) for e in entries]) == f"thought, then answered, then called get_weather(#{short})"


def _gemini_tool() -> types.Tool:
    schema = {"type": "object", "properties": {"location": {"type": "string"}}}
    declaration = types.FunctionDeclaration(
        name="get_weather", description="Weather.", parameters=types.Schema.model_validate(schema)
    )
    return types.Tool(function_declarations=[declaration])


@pytest.mark.parametrize("mode", gemini.MODES)
def test_gemini_layout_in_every_mode(mode, sim, config, journal_dir, caplog):
    caplog.set_level(logging.DEBUG)
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        gemini.run(mode, sim.genai_client(), tools=[_gemini_tool()])

    entries = _check(telemetry, journal_dir, caplog)
    assert entries == [{"part": 0, "type": "reasoning"}, {**_weather_call(key="location"), "id": ""}]


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("mode", openai_helpers.MODES)
def test_openai_layout_in_every_mode(api, mode, sim, config, journal_dir, caplog):
    caplog.set_level(logging.DEBUG)
    make = lambda is_async: sim.async_openai_client() if is_async else sim.openai_client()  # noqa: E731
    parameters = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    function = {"name": "lookup", "parameters": parameters, "strict": True}  # ``parse`` wants strict tools
    tool = {"type": "function", "function": function} if api == "chat" else {"type": "function", **function}
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        openai_helpers.run(api, mode, make, tools=[tool])

    entries = _check(telemetry, journal_dir, caplog)
    assert _shape([json.dumps(e) for e in entries]) == [
        {"part": 0, "type": "reasoning"},
        {"arguments_sha256": sha256_hex(canonical_json({})), "name": "lookup", "type": "tool_call"},
    ]
    assert entries[1]["id"].startswith("call_")


def test_layout_without_tools_is_reasoning_then_text(sim, config, journal_dir, caplog):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        ANTHROPIC_MODES["sync"](sim, request())
    assert _check(telemetry, journal_dir, caplog) == [{"part": 0, "type": "reasoning"}, {"type": "text"}]


def test_streamed_and_complete_layouts_are_equal(sim, config, journal_dir):
    """One content, eleven call modes: one layout (the simulator's tool id depends on the request, so
    the calls run under one execution and the ids are compared apart)."""
    with instrumented(AnthropicInstrumentor(), config=config), execution("run-layout"):
        for mode in ANTHROPIC_MODES:
            ANTHROPIC_MODES[mode](sim, request(tools=[WEATHER]))
    layouts = {json.dumps(_shape(r["attributes"]["loom.reasoning.layout"])) for r in _capture_records(journal_dir)}
    assert len(layouts) == 1


def test_verify_detects_a_changed_layout(sim, config, journal_dir):
    """The layout is in the chained record: moving the tool call before the reasoning breaks the chain."""
    with instrumented(AnthropicInstrumentor(), config=config):
        ANTHROPIC_MODES["sync"](sim, request(tools=[WEATHER]))
    (untouched,) = verify(journal_dir).origins
    assert untouched.modified == () and untouched.broken_links == ()
    (segment,) = [p for p in journal_dir.rglob("*") if p.is_file() and b'"capture"' in p.read_bytes()]
    lines = segment.read_bytes().splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if b'"capture"' in line]
    record = json.loads(lines[at])
    layout = record["attributes"]["loom.reasoning.layout"]
    record["attributes"]["loom.reasoning.layout"] = [layout[2], layout[0], layout[1]]  # the call came first
    lines[at] = canonical_json(record) + b"\n"
    segment.write_bytes(b"".join(lines))
    report = verify(journal_dir)
    assert not report.ok
    (origin,) = report.origins
    assert origin.modified == (record["seq"],)


def test_arguments_digest_is_canonical():
    """A streamed call's JSON text and a complete call's object digest alike; not-JSON text is hashed raw."""
    assert arguments_digest('{"b": 1, "a": [1, 2]}') == arguments_digest({"a": [1, 2], "b": 1})
    assert arguments_digest("") == arguments_digest(None) == arguments_digest({})
    assert arguments_digest("{not json") == sha256_hex(b"{not json")


def test_audit_show_prints_the_layout(sim, tmp_path, capsys):
    store = FileReasoningStore(tmp_path / "store", fsync=False)
    journal = tmp_path / "journal"
    with instrumented(AnthropicInstrumentor(), config=ReasoningConfig(store=store, journal=journal)):
        with execution("run-layout"), step("plan"):
            message = ANTHROPIC_MODES["sync"](sim, request(tools=[WEATHER]))
    (tool_use,) = [b for b in message.content if b.type == "tool_use"]
    short = arguments_digest(tool_use.input)[:4]
    argv = ["audit", "show", "--store", f"file://{tmp_path / 'store'}", "--journal", str(journal)]
    assert main([*argv, "--execution", "run-layout"]) == 0
    out = capsys.readouterr().out
    assert f"attempt 1: thought, then answered, then called get_weather(#{short})" in out
    assert main([*argv, "--execution", "run-layout", "--json"]) == 0
    (attempt,) = json.loads(capsys.readouterr().out)["steps"][0]["attempts"]
    assert [e["type"] for e in attempt["layout"]] == ["reasoning", "text", "tool_call"]
    assert attempt["layout"][2]["id"] == tool_use.id
