"""The holes of issue #27 point 4, measured beside the real peers (official OTel GenAI, OpenInference,
OpenLLMetry; each wrapped outside loom-otel, so its span is recorded and must come out scrubbed):
the previous turn's thought sent back as plain text in a later trace (as google-adk does), values cut
by ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``, a proxy's 400 quoting the request (status and exception
event), and a ``LoggerProvider`` and a ``TracerProvider`` made after ``instrument()``."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import Telemetry, find_leaks
from loom_otel.testing.simulator import Simulator
from tests.scrub.test_scrub import CANARY, _others, _request

pytestmark = pytest.mark.peers

PEERS = ["official", "openinference", "openllmetry"]


@pytest.fixture(autouse=True)
def _content_on(monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_AND_EVENT")
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")


def _beside(name: str, config: Any, telemetry: Telemetry, logs: LoggerProvider | None = None) -> tuple[Any, Any]:
    loom = AnthropicInstrumentor()
    loom.instrument(tracer_provider=telemetry.provider, config=config, skip_dep_check=True)
    other = _others()[name]()
    other.instrumentor.instrument(tracer_provider=telemetry.provider, logger_provider=logs, **other.kwargs)
    return loom, other


def _theirs(telemetry: Telemetry) -> list[Any]:
    return [s for s in telemetry.spans if not s.instrumentation_scope.name.startswith("loom_otel")]


def _call(client: Any, stream: bool, **request: Any) -> Any:
    if not stream:
        return client.messages.create(**request)
    with client.messages.stream(**request) as streamed:
        return streamed.get_final_message()


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("name", PEERS)
def test_a_thought_sent_back_as_plain_text_in_a_later_trace(name, stream, config):
    """google-adk's way: the next turn's input holds the previous turn's thought as a text part."""
    telemetry = Telemetry.in_memory()
    loom, other = _beside(name, config, telemetry)
    client = Simulator(reasoning_text=CANARY).anthropic_client()
    try:
        first = _call(client, stream, **_request([{"role": "user", "content": "Weather in Paris?"}]))
        thought = next(b.thinking for b in first.content if b.type == "thinking")
        history = [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [{"type": "text", "text": f"(thinking) {thought}"}]},
            {"role": "user", "content": "And tomorrow?"},
        ]
        _call(client, stream, **{**_request(history), "thinking": {"type": "disabled"}})
    finally:
        other.uninstrument()
        loom.uninstrument()
    theirs = _theirs(telemetry)
    assert len({s.context.trace_id for s in theirs}) == 2  # two traces
    assert not any(CANARY[20:50] in json.dumps(dict(s.attributes or {})) for s in theirs)
    assert find_leaks([CANARY], spans=telemetry.spans) == []


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("limit", [120, 200, 300, 450, 700])
@pytest.mark.parametrize("name", PEERS)
def test_values_cut_by_the_attribute_limit(name, limit, stream, config, monkeypatch):
    """Every string attribute cut at ``limit``: no prefix of the text or a signature long enough to be
    unambiguous (48 characters) is exported."""
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", str(limit))
    telemetry = Telemetry.in_memory()
    loom, other = _beside(name, config, telemetry)
    client = Simulator(reasoning_text=CANARY).anthropic_client()
    try:
        messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
        first = _call(client, stream, **_request(messages))
        messages += _follow_up(first)
        second = _call(client, stream, **_request(messages))
    finally:
        other.uninstrument()
        loom.uninstrument()
    signatures = [b.signature for m in (first, second) for b in m.content if b.type == "thinking"]
    assert _theirs(telemetry) and signatures
    assert find_leaks([s[:48] for s in [CANARY, *signatures]], spans=telemetry.spans) == []


def _follow_up(message: Any) -> list[Any]:
    """The answer sent back (its thinking block included), then the tool's result or a new question."""
    tool = next((b for b in message.content if b.type == "tool_use"), None)
    reply: Any = (
        [{"type": "tool_result", "tool_use_id": tool.id, "content": "sunny"}] if tool is not None else "And tomorrow?"
    )
    return [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]},
        {"role": "user", "content": reply},
    ]


def _proxy_rejecting_the_second_call(sim: Simulator) -> httpx2.MockTransport:
    """The simulator behind a proxy that answers the second request with a 400 quoting it whole."""
    inner = sim.transport()
    seen: list[int] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(1)
        if len(seen) == 1:
            return inner.handle_request(request)
        quoted = request.read().decode()
        error = {"type": "invalid_request_error", "message": f"proxy: rejected request body {quoted}"}
        return httpx2.Response(400, json={"type": "error", "error": error})

    return httpx2.MockTransport(handle)


@pytest.mark.parametrize("name", PEERS)
def test_a_400_quoting_the_request(name, config):
    """Status description and exception event of the peer's span (the SDK error's message holds the body)."""
    import anthropic

    telemetry = Telemetry.in_memory()
    loom, other = _beside(name, config, telemetry)
    sim = Simulator(reasoning_text=CANARY)
    client = sim.anthropic_client(http_client=httpx2.Client(transport=_proxy_rejecting_the_second_call(sim)))
    try:
        messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
        first = client.messages.create(**_request(messages))
        messages += _follow_up(first)
        with pytest.raises(anthropic.BadRequestError) as raised:
            client.messages.create(**_request(messages))
    finally:
        other.uninstrument()
        loom.uninstrument()
    signatures = [b.signature for b in first.content if b.type == "thinking"]
    assert CANARY in str(raised.value)  # what the app receives is the vendor's (here the proxy's) own
    failed = [s for s in _theirs(telemetry) if s.status.status_code.name == "ERROR"]
    assert failed, "the peer recorded no failed span"
    assert find_leaks([CANARY, *signatures], spans=telemetry.spans) == []


def test_providers_made_after_instrument(config):
    """OpenLLMetry in its events mode on a ``TracerProvider`` and a ``LoggerProvider`` both made after
    loom-otel's ``instrument()`` and never given to it."""
    telemetry = Telemetry.in_memory()
    loom = AnthropicInstrumentor()
    loom.instrument(tracer_provider=telemetry.provider, config=config, skip_dep_check=True)
    spans, records = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracers, logs = TracerProvider(), LoggerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(spans))
    logs.add_log_record_processor(SimpleLogRecordProcessor(records))
    other = _others()["openllmetry_events"]()
    other.instrumentor.instrument(tracer_provider=tracers, logger_provider=logs, **other.kwargs)
    client = Simulator(reasoning_text=CANARY).anthropic_client()
    try:
        message = client.messages.create(**_request([{"role": "user", "content": "Weather in Paris?"}]))
    finally:
        other.uninstrument()
        loom.uninstrument()
    signatures = [b.signature for b in message.content if b.type == "thinking"]
    assert spans.get_finished_spans() and records.get_finished_logs()
    texts = [r.to_json() for r in records.get_finished_logs()]
    assert find_leaks([CANARY, *signatures], spans=spans.get_finished_spans(), texts=texts) == []
    logs.shutdown()
