"""Reasoning scrubbing of everyone's telemetry: other instrumentations run beside loom-otel, in both
orders, against the simulator; every exported span, span event and log record is scanned for the
canary text and the signatures."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan

from loom_otel.core import ReasoningConfig
from loom_otel.core._scrub import REMOVED, install_scrubber, scrub_value, uninstall_scrubber
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import Telemetry, find_leaks
from loom_otel.testing.simulator import Simulator

CANARY = "CANARY-5be1-scrub: the user wants Paris weather, so I call the tool first."
CLAUDE = "claude-sonnet-4-6"
ORDERS = ("loom_first", "loom_last")


class _Owner:
    """Stands for an instrumented instrumentor (the scrubber keeps its owners in a weak set)."""


def _request(messages: list[Any]) -> dict[str, Any]:
    return {
        "model": CLAUDE,
        "max_tokens": 2048,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": messages,
    }


def _conversation(client: Any, stream: bool = False) -> list[str]:
    """Two turns, the second sending the first turn's thinking back; returns every signature seen."""
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    signatures: list[str] = []
    for turn in range(2):
        if stream:
            with client.messages.stream(**_request(messages)) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**_request(messages))
        signatures += [getattr(b, "signature", None) or getattr(b, "data", "") for b in message.content]
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
        tool = next((b for b in message.content if b.type == "tool_use"), None)
        if tool is not None:
            messages.append(
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "sunny"}]}
            )
        elif turn == 0:
            messages.append({"role": "user", "content": "And tomorrow?"})
    return [s for s in signatures if s]


class _Other:
    """Another instrumentation: instrument it on the providers, and undo it."""

    def __init__(self, name: str, instrumentor: Any, **kwargs: Any) -> None:
        self.name = name
        self.instrumentor = instrumentor
        self.kwargs = kwargs

    def instrument(self, telemetry: Telemetry, logs: LoggerProvider) -> None:
        self.instrumentor.instrument(tracer_provider=telemetry.provider, logger_provider=logs, **self.kwargs)

    def uninstrument(self) -> None:
        self.instrumentor.uninstrument()


def _official() -> _Other:
    from opentelemetry.instrumentation.genai.anthropic import AnthropicInstrumentor as Official

    return _Other("official", Official())


def _openinference() -> _Other:
    from openinference.instrumentation.anthropic import AnthropicInstrumentor as OpenInference

    return _Other("openinference", OpenInference())


def _openllmetry(**kwargs: Any) -> _Other:
    from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor as OpenLLMetry

    return _Other("openllmetry", OpenLLMetry(**kwargs))


def _others() -> dict[str, Callable[[], _Other]]:
    return {
        "official": _official,
        "openinference": _openinference,
        "openllmetry": _openllmetry,
        "openllmetry_events": lambda: _openllmetry(use_attributes=False),
    }


def _scan(spans: tuple[ReadableSpan, ...], logs: InMemoryLogRecordExporter, secrets: list[str]) -> list[str]:
    records = [r.to_json() for r in logs.get_finished_logs()]
    return find_leaks(secrets, spans=spans, texts=records)


@pytest.fixture
def logs() -> Iterator[tuple[LoggerProvider, InMemoryLogRecordExporter]]:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _run_beside(other: _Other, order: str, config: ReasoningConfig, logs: Any, stream: bool) -> Any:
    provider, log_exporter = logs
    telemetry = Telemetry.in_memory()
    loom = AnthropicInstrumentor()
    sim = Simulator(reasoning_text=CANARY)
    steps = [lambda: loom.instrument(tracer_provider=telemetry.provider, config=config, skip_dep_check=True)]
    steps.append(lambda: other.instrument(telemetry, provider))
    if order == "loom_last":
        steps.reverse()
    for step in steps:
        step()
    install_scrubber(loom, telemetry.provider, provider)  # the logs side: the instrumentor's logger_provider
    try:
        signatures = _conversation(sim.anthropic_client(), stream=stream)
    finally:
        other.uninstrument()
        loom.uninstrument()
    return telemetry, log_exporter, signatures


CASES = [(name, order, stream) for name in _others() for order in ORDERS for stream in (False, True)]


@pytest.mark.peers
@pytest.mark.parametrize(("name", "order", "stream"), CASES)
def test_no_reasoning_in_other_instrumentations(name, order, stream, config, logs, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_AND_EVENT")  # the official one
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    telemetry, log_exporter, signatures = _run_beside(_others()[name](), order, config, logs, stream)
    theirs = [s for s in telemetry.spans if not s.instrumentation_scope.name.startswith("loom_otel")]
    if order == "loom_first":  # the other wraps outside loom-otel: its span is there, scrubbed
        assert theirs, "the other instrumentation recorded nothing"
        if name == "openllmetry_events":
            assert log_exporter.get_finished_logs(), "the events mode emitted no log records"
    else:  # loom-otel wraps outside: the other's wrapper is passed under it (one GenAI span per call)
        assert theirs == [] and log_exporter.get_finished_logs() == ()
    assert len(signatures) >= 2
    assert _scan(telemetry.spans, log_exporter, [CANARY, *signatures]) == []


@pytest.mark.peers
def test_the_other_instrumentation_still_shows_references_and_answers(config, logs):
    """Outermost (instrumented after loom-otel): the reasoning part is loom-otel's reference and digest."""
    telemetry, _, _ = _run_beside(_others()["openllmetry"](), "loom_first", config, logs, False)
    span = next(s for s in telemetry.spans if s.instrumentation_scope.name.startswith("opentelemetry.instr"))
    (message,) = json.loads(span.attributes["gen_ai.output.messages"])
    reasoning = [p for p in message["parts"] if p["type"] == "reasoning"]
    texts = [p for p in message["parts"] if p["type"] == "text"]
    assert reasoning and all(p["content"].startswith("[loom-otel reasoning text ref=") for p in reasoning)
    assert all("digest=" in p["content"] for p in reasoning)
    assert texts and all(p["content"].startswith("Here is the answer") for p in texts)


@pytest.mark.peers
def test_anthropic_sdk_content_mode(config, monkeypatch):
    """The anthropic SDK's own spans with ``ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content``."""
    monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE", "content")
    telemetry = Telemetry.in_memory()
    loom = AnthropicInstrumentor()
    loom.instrument(tracer_provider=telemetry.provider, config=config, skip_dep_check=True)
    sim = Simulator(reasoning_text=CANARY)
    client = sim.anthropic_client(
        open_telemetry={"traces": {"enabled": True, "content_mode": "content"}, "tracer_provider": telemetry.provider}
    )
    try:
        signatures = _conversation(client)
    finally:
        loom.uninstrument()
    # Inside a loom-otel call the SDK starts no span of its own (one GenAI span per call), so its content
    # mode has nothing to export; loom-otel's spans carry references only.
    sdk_spans = [s for s in telemetry.spans if s.instrumentation_scope.name == "com.anthropic.sdk.python"]
    assert sdk_spans == [] and len([s for s in telemetry.spans if s.name.startswith("chat ")]) == 2
    assert find_leaks([CANARY, *signatures], spans=telemetry.spans) == []


def test_without_a_capture_reasoning_shapes_are_removed():
    """Nothing remembered (another process, or the text ended up on a span before loom-otel captured it)."""
    messages = json.dumps(
        [
            {
                "role": "assistant",
                "parts": [{"type": "reasoning", "content": CANARY}, {"type": "text", "content": "Hi"}],
            },
            {"role": "model", "parts": [{"text": CANARY, "thought": True}, {"text": "a", "thoughtSignature": "c2ln"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": CANARY}], "encrypted_content": "gAAA"},
            {"role": "assistant", "content": "x", "reasoning_content": CANARY},
        ]
    )
    scrubbed = json.loads(scrub_value(messages))
    assert (
        CANARY not in json.dumps(scrubbed) and "c2ln" not in json.dumps(scrubbed) and "gAAA" not in json.dumps(scrubbed)
    )
    assert scrubbed[0]["parts"][0] == {"type": "reasoning", "content": REMOVED}
    assert scrubbed[0]["parts"][1] == {"type": "text", "content": "Hi"}
    assert scrubbed[1]["parts"][1]["text"] == "a"


def test_reasoning_shapes_with_escaped_names_are_removed():
    """A JSON text that writes the names a reasoning shape is read by with escaped letters is read too."""
    messages = json.dumps([{"role": "assistant", "content": [{"type": "thinking", "thinking": CANARY}]}])
    escaped = messages.replace('"thinking"', '"\\u0074hinking"')
    assert '"thinking"' not in escaped and json.loads(escaped) == json.loads(messages)
    scrubbed = json.loads(scrub_value(escaped))
    assert scrubbed[0]["content"][0] == {"type": "thinking", "thinking": REMOVED}


def test_json_without_reasoning_names_is_not_read(monkeypatch):
    """A JSON value none of whose names could make it a reasoning shape comes back as it is, unparsed."""
    value = json.dumps([{"role": "user", "content": [{"type": "text", "text": "Plan the trip, step by step."}]}])

    def parse(text: str) -> object:
        raise AssertionError("parsed")

    monkeypatch.setattr(json, "loads", parse)
    assert scrub_value(value) is value
    with pytest.raises(AssertionError):
        scrub_value(value.replace("text", "thinking"))  # a name a reasoning shape has: read


@pytest.mark.peers
def test_pydantic_ai_instrument_all(config):
    """pydantic-ai's own instrumentation (``Agent.instrument_all``, content on) over an Anthropic model."""
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel, AnthropicModelSettings
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.providers.anthropic import AnthropicProvider

    telemetry = Telemetry.in_memory()
    loom = AnthropicInstrumentor()
    loom.instrument(tracer_provider=telemetry.provider, config=config, skip_dep_check=True)
    sim = Simulator(reasoning_text=CANARY)
    model = AnthropicModel(CLAUDE, provider=AnthropicProvider(anthropic_client=sim.async_anthropic_client()))
    settings = AnthropicModelSettings(anthropic_thinking={"type": "enabled", "budget_tokens": 1024}, max_tokens=2048)
    Agent.instrument_all(InstrumentationSettings(tracer_provider=telemetry.provider, include_content=True))
    try:
        agent = Agent(model, model_settings=settings)

        @agent.tool_plain
        def get_weather(location: str) -> str:
            """Weather for a location."""
            return f"Sunny in {location}."

        result = agent.run_sync("Weather in Paris?")
    finally:
        Agent.instrument_all(False)
        loom.uninstrument()
    signatures = [
        p.signature for m in result.all_messages() for p in m.parts if getattr(p, "part_kind", "") == "thinking"
    ]
    theirs = [s for s in telemetry.spans if s.instrumentation_scope.name.startswith("pydantic")]
    assert any("gen_ai.output.messages" in (s.attributes or {}) for s in theirs)
    assert signatures and all(signatures)
    assert find_leaks([CANARY, *signatures], spans=telemetry.spans) == []


def _gemini_conversation(client: Any) -> list[str]:
    """Two Gemini turns with a function call between them (thought parts and signatures sent back)."""
    from google.genai import types

    def get_weather(location: str) -> str:
        """Returns the weather forecast for a location."""
        return f"Sunny in {location}."

    cfg = types.GenerateContentConfig(
        tools=[get_weather],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        thinking_config=types.ThinkingConfig(include_thoughts=True),
    )
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="Rain in Lyon?")])]
    signatures: list[str] = []
    for _ in range(2):
        response = client.models.generate_content(model="gemini-3-flash-preview", contents=contents, config=cfg)
        parts = response.candidates[0].content.parts
        for part in parts:
            if part.thought_signature:
                signatures += [base64.b64encode(part.thought_signature).decode()]
                signatures += [base64.urlsafe_b64encode(part.thought_signature).decode()]
        contents.append(types.Content(role="model", parts=parts))
        call = next((p.function_call for p in parts if p.function_call), None)
        if call is None:
            break
        contents.append(
            types.Content(role="user", parts=[types.Part.from_function_response(name=call.name, response={"r": "ok"})])
        )
    return signatures


@pytest.mark.peers
@pytest.mark.parametrize("order", ORDERS)
def test_openinference_google_genai(order, config):
    from openinference.instrumentation.google_genai import GoogleGenAIInstrumentor as OpenInference

    from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor

    telemetry = Telemetry.in_memory()
    loom, other = GoogleGenAiInstrumentor(), OpenInference()
    steps = [
        lambda: loom.instrument(tracer_provider=telemetry.provider, config=config, skip_dep_check=True),
        lambda: other.instrument(tracer_provider=telemetry.provider),
    ]
    for step in steps if order == "loom_first" else reversed(steps):
        step()
    try:
        signatures = _gemini_conversation(Simulator(reasoning_text=CANARY).genai_client())
    finally:
        other.uninstrument()
        loom.uninstrument()
    theirs = [s for s in telemetry.spans if s.instrumentation_scope.name.startswith("openinference")]
    assert signatures and (bool(theirs) if order == "loom_first" else theirs == [])  # outside: passed under
    assert find_leaks([CANARY, *signatures], spans=telemetry.spans) == []


@pytest.mark.peers
@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("order", ORDERS)
def test_openinference_openai(api, order, config):
    from openinference.instrumentation.openai import OpenAIInstrumentor as OpenInference

    from loom_otel.instrumentation.openai import OpenAiInstrumentor

    telemetry = Telemetry.in_memory()
    loom, other = OpenAiInstrumentor(), OpenInference()
    steps = [
        lambda: loom.instrument(tracer_provider=telemetry.provider, config=config, skip_dep_check=True),
        lambda: other.instrument(tracer_provider=telemetry.provider),
    ]
    for step in steps if order == "loom_first" else reversed(steps):
        step()
    client = Simulator(reasoning_text=CANARY).openai_client()
    secrets = [CANARY]
    try:
        if api == "chat":
            first = client.chat.completions.create(
                model="deepseek-reasoner", messages=[{"role": "user", "content": "Q?"}]
            )
            message = first.choices[0].message
            history = [
                {"role": "user", "content": "Q?"},
                {
                    "role": "assistant",
                    "content": message.content,
                    "reasoning_content": message.model_extra["reasoning_content"],
                },
                {"role": "user", "content": "And?"},
            ]
            client.chat.completions.create(model="deepseek-reasoner", messages=history)
        else:
            first = client.responses.create(
                model="o4-mini", input="Q?", reasoning={"summary": "auto"}, include=["reasoning.encrypted_content"]
            )
            secrets += [i.encrypted_content for i in first.output if i.type == "reasoning" and i.encrypted_content]
            items = [{"role": "user", "content": "Q?"}, *[i.model_dump(exclude_none=True) for i in first.output]]
            client.responses.create(
                model="o4-mini", input=[*items, {"role": "user", "content": "And?"}], reasoning={"summary": "auto"}
            )
    finally:
        other.uninstrument()
        loom.uninstrument()
    theirs = [s for s in telemetry.spans if s.instrumentation_scope.name.startswith("openinference")]
    assert theirs
    assert find_leaks(secrets, spans=telemetry.spans) == []


def test_sighted_reasoning_is_removed_from_shapeless_log_records(logs):
    """What the wrappers report as soon as a response is parsed is scrubbed from a log record that has no
    reasoning shape (OpenLLMetry's events mode logs thinking as a plain ``gen_ai.choice``), before capture
    gives it a reference; the reference replaces the marker once remembered."""
    from opentelemetry._logs import LogRecord

    from loom_otel.core import ReasoningKind
    from loom_otel.core._evidence._model import Reasoning, ReasoningPart
    from loom_otel.core._scrub import remember, sight

    provider, exporter = logs
    owner = _Owner()  # what an instrumentor is to the scrubber: it works while one is instrumented
    install_scrubber(owner, Telemetry.in_memory().provider, provider)
    reasoning = Reasoning(ReasoningKind.TEXT, "anthropic", text=CANARY, signature="EqQDsig-canary-0123456789")
    sight([reasoning], 0xABC)
    logger = provider.get_logger("peer")
    logger.emit(LogRecord(body={"index": 0, "message": {"content": CANARY}}, attributes={"sig": reasoning.signature}))
    part = ReasoningPart(ReasoningKind.TEXT, "anthropic", reasoning.signature, "mem://r1", "d" * 64, 10)
    remember([reasoning], [part], 0xABC)
    logger.emit(LogRecord(body={"index": 0, "message": {"content": CANARY}}))
    first, second = (r.log_record for r in exporter.get_finished_logs())
    assert first.body["message"]["content"] == REMOVED and first.attributes["sig"] == REMOVED
    assert second.body["message"]["content"].startswith("[loom-otel reasoning text ref=mem://r1")
    assert _scan((), exporter, [CANARY, reasoning.signature]) == []
    uninstall_scrubber(owner)


@pytest.mark.peers
def test_a_users_own_batch_exporter_registered_first_gets_scrubbed_spans(config):
    """The scrubber rewrites in the SDK's ``_on_ending`` hook: an exporter the application registered
    before loom-otel (a ``BatchSpanProcessor``, the usual setup) only ever sees scrubbed spans."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    other = _openllmetry()
    loom = AnthropicInstrumentor()
    loom.instrument(tracer_provider=provider, config=config, skip_dep_check=True)
    other.instrumentor.instrument(tracer_provider=provider)
    try:
        signatures = _conversation(Simulator(reasoning_text=CANARY).anthropic_client())
    finally:
        other.uninstrument()
        loom.uninstrument()
    provider.force_flush()
    spans = exporter.get_finished_spans()
    assert any("gen_ai.output.messages" in (s.attributes or {}) for s in spans)
    assert find_leaks([CANARY, *signatures], spans=spans) == []


def test_a_chained_record_travelling_on_another_span_is_left_as_written(config, tmp_path):
    """A journal record's event (here a signed checkpoint, whose ``loom.audit.checkpoint.signature`` is
    named like a reasoning signature) holds no reasoning and is hashed: on a span of another scope (a
    collector's relay, a test recorder, a peer's model span) the scrubber leaves it as the journal wrote
    it, so its chain still proves it."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from loom_otel.core._evidence._journal._checkpoint import generate_key
    from loom_otel.core._evidence._journal._reader import iter_records
    from loom_otel.core._evidence._journal._records import event_for_record
    from loom_otel.core._evidence._journal._writer import Journal

    generate_key(tmp_path / "key.pem")
    journal = Journal(tmp_path / "journal", checkpoint_key=tmp_path / "key.pem")
    journal.append("capture", {"loom.execution.id": "run-1", "loom.step.id": "s"})
    journal.checkpoint()
    journal.close()
    (checkpoint,) = [r for r in iter_records(tmp_path / "journal") if r["type"] == "checkpoint"]
    name, attributes, time_ns = event_for_record(checkpoint)
    assert attributes["loom.audit.checkpoint.signature"]  # signed
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    from loom_otel.testing import instrumented

    with instrumented(AnthropicInstrumentor(), config=config):  # the scrubber is on
        with provider.get_tracer("a.relay").start_as_current_span("relay") as span:
            span.add_event(name, attributes, time_ns)
    (event,) = exporter.get_finished_spans()[0].events
    assert dict(event.attributes) == attributes
