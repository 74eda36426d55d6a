"""What a call sent or returned visibly is not a secret (issue #42 point 5): beside a real peer, the
user's prompt a thought restates, a tool's output it quotes, the answer, and an attacker-chosen string a
prompt made the model think are exported intact, while the thought itself is still removed."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest
from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

from loom_otel.testing import Telemetry, find_leaks
from loom_otel.testing.simulator import Simulator
from tests.scrub.test_scrub import _request
from tests.scrub.test_scrub_peers import PEERS, _beside, _call, _theirs

pytestmark = pytest.mark.peers

CANARY = "CANARY-visible-4d2e: I recall three late openings from my own memory, unverified."
QUESTION = "Which museums in Paris stay open late on Thursday evenings for students?"
TOOL_JSON = json.dumps(
    {"station": "Paris-Montsouris", "forecast": "light rain after midnight", "humidity_percent": 81, "wind_kmh": 14}
)
ATTACK = "grant-admin-role-to-mallory-for-audit-log-9f3b"
TOOLS = [
    {
        "name": "get_weather",
        "description": "The weather forecast of a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


@pytest.fixture(autouse=True)
def _content_on(monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_AND_EVENT")
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")


@pytest.fixture
def logs() -> Iterator[tuple[LoggerProvider, InMemoryLogRecordExporter]]:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _strings(value: Any) -> Iterator[str]:
    """Every string in an attribute value, and in the JSON texts it holds (parsed, at any depth)."""
    if isinstance(value, str):
        yield value
        if value.lstrip()[:1] in ("{", "["):
            try:
                parsed = json.loads(value)
            except ValueError:
                return
            yield from _strings(parsed)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _texts(telemetry: Telemetry) -> list[str]:
    """The strings the peer's spans and their events export."""
    found: list[str] = []
    for span in _theirs(telemetry):
        found += _strings(dict(span.attributes or {}))
        for event in span.events:
            found += _strings(dict(event.attributes or {}))
    return found


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("name", PEERS)
def test_the_prompt_a_thought_restates_and_the_answer_stay_intact(name, stream, config, logs):
    provider, exporter = logs
    telemetry = Telemetry.in_memory()
    loom, other = _beside(name, config, telemetry, provider)
    thought = f"The user asks: {QUESTION} {CANARY}"
    client = Simulator(reasoning_text=thought).anthropic_client()
    try:
        message = _call(client, stream, **_request([{"role": "user", "content": QUESTION}]))
        provider.get_logger("app.audit").emit(LogRecord(body=f"model thought: {thought}"))
    finally:
        other.uninstrument()
        loom.uninstrument()
    answer = next(b.text for b in message.content if b.type == "text")
    assert QUESTION in answer  # the simulator's answer restates the question too
    texts = _texts(telemetry)
    assert QUESTION in texts, "the user's prompt was rewritten"
    assert answer in texts, "the visible answer was rewritten"
    (record,) = [r.log_record for r in exporter.get_finished_logs() if r.instrumentation_scope.name == "app.audit"]
    assert QUESTION in str(record.body) and "late openings" not in str(record.body)  # the rest of the thought went
    records = [r.to_json() for r in exporter.get_finished_logs()]
    assert find_leaks([CANARY], spans=telemetry.spans, texts=records) == []


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("name", PEERS)
def test_a_tool_output_the_thought_quotes_still_parses(name, stream, config):
    telemetry = Telemetry.in_memory()
    loom, other = _beside(name, config, telemetry)
    sim = Simulator(reasoning_text=f"I need the forecast first. {CANARY}")
    client = sim.anthropic_client()
    try:
        messages: list[Any] = [{"role": "user", "content": "Will it rain in Paris tonight?"}]
        first = _call(client, stream, **_request(messages), tools=TOOLS)
        tool = next(b for b in first.content if b.type == "tool_use")
        messages += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": TOOL_JSON}]},
        ]
        sim.script = replace(sim.script, reasoning_text=f"The tool returned {TOOL_JSON}, so: rain. {CANARY}")
        _call(client, stream, **_request(messages), tools=TOOLS)
    finally:
        other.uninstrument()
        loom.uninstrument()
    quoted = [t for t in _texts(telemetry) if "Paris-Montsouris" in t and "humidity" in t]
    assert quoted, "the peer recorded no tool output"
    assert TOOL_JSON in quoted, "the tool output was rewritten"
    assert json.loads(TOOL_JSON)["forecast"] == "light rain after midnight"
    assert find_leaks([CANARY], spans=telemetry.spans) == []


@pytest.mark.parametrize("name", PEERS)
def test_an_attacker_chosen_thought_does_not_blank_a_security_log_line(name, config, logs):
    """A prompt makes the model think a string of the attacker's choosing; a log line of the application
    that carries it (a denied request) is exported as it was written."""
    provider, exporter = logs
    telemetry = Telemetry.in_memory()
    loom, other = _beside(name, config, telemetry, provider)
    client = Simulator(reasoning_text=f"The user wants me to think {ATTACK} verbatim. {CANARY}").anthropic_client()
    line = f"security: denied role change {ATTACK} from 203.0.113.9"
    try:
        prompt = f"Before answering, think this exact phrase: {ATTACK}"
        _call(client, False, **_request([{"role": "user", "content": prompt}]))
        provider.get_logger("app.security").emit(LogRecord(body=line, attributes={"security.subject": ATTACK}))
    finally:
        other.uninstrument()
        loom.uninstrument()
    (record,) = [r.log_record for r in exporter.get_finished_logs() if r.log_record.body == line]
    assert dict(record.attributes or {}) == {"security.subject": ATTACK}
    records = [r.to_json() for r in exporter.get_finished_logs()]
    assert find_leaks([CANARY], spans=telemetry.spans, texts=records) == []


@pytest.mark.parametrize("name", PEERS)
def test_a_short_thought_the_prompt_holds_is_not_searched_for(name, config):
    """A thought of fewer than 30 letters and digits is searched for inside its trace, unless the call
    showed it: the prompt that holds it is exported intact, the thought's own place still replaced."""
    telemetry = Telemetry.in_memory()
    loom, other = _beside(name, config, telemetry)
    prompt = "Rain in Paris tonight? I need to know before I leave the office."
    client = Simulator(reasoning_text="Rain in Paris tonight?").anthropic_client()
    try:
        _call(client, False, **_request([{"role": "user", "content": prompt}]))
    finally:
        other.uninstrument()
        loom.uninstrument()
    texts = _texts(telemetry)
    assert prompt in texts, "the user's prompt was rewritten"
    assert "Rain in Paris tonight?" not in texts  # the thought as a reasoning part: its reference


class _Counted(dict):
    """A message of a request that counts how often it is read (its items)."""

    reads = 0

    def items(self):
        type(self).reads += 1
        return super().items()


def test_what_a_call_showed_is_read_only_when_a_record_holds_a_run_of_its_thought():
    """Reading a call's request and answer for their visible text costs as much as entering its thought:
    it is done when a record first holds a run of the thought, and then the prompt the thought restates
    is still exported intact while the rest of the thought is removed."""
    from loom_otel.core import ReasoningKind
    from loom_otel.core._evidence._model import Reasoning, ReasoningPart
    from loom_otel.core._scrub import remember, scrub_value

    prompt = "Plan a three day trip to Lisbon with museums and tram rides for a family of four"
    thought = f"The user asks: {prompt}. CANARY-lazy-visible-0a1b2c3d, so I list the trams first of all."
    _Counted.reads = 0
    reasoning = Reasoning(ReasoningKind.TEXT, "anthropic", text=thought)
    part = ReasoningPart(ReasoningKind.TEXT, "anthropic", None, "mem://lazy", "e" * 64, len(thought))
    remember([reasoning], [part], 0xC1, visible={"messages": [_Counted(role="user", content=prompt)]})
    unrelated = "a log line about the 8:15 train to Porto and nothing else at all"
    assert scrub_value(unrelated, 0xC1) == unrelated
    assert _Counted.reads == 0  # entered, its call's visible text not read
    scrubbed = scrub_value(f"debug: {thought}", 0xC1)
    assert _Counted.reads == 1
    assert prompt in scrubbed
    assert "CANARY-lazy-visible" not in scrubbed and "[loom-otel reasoning text ref=mem://lazy" in scrubbed
    assert scrub_value(f"next turn: {prompt}", 0xC2) == f"next turn: {prompt}"
