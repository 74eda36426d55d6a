"""Capture at the Anthropic seam, every scenario in every call mode, against the real SDK."""

from __future__ import annotations

import gc
import json
import logging
from pathlib import Path
from typing import Any

import anthropic
import pytest

from loom_otel.core import (
    MemoryReasoningStore,
    ReasoningCaptureError,
    ReasoningConfig,
    ReasoningKind,
    execution,
    step,
)
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from loom_otel.testing.simulator._clients import anthropic_http
from tests.anthropic.modes import MODES, STREAMING, request
from tests.support.anthropic_sdk import runs_on_every_sdk

CANARY = "CANARY-7f3a9c-thinking-text"
MODE_NAMES = list(MODES)


@pytest.fixture
def sim() -> Simulator:
    return Simulator(reasoning_text=f"I should check the weather first. {CANARY}")


def _records(journal_dir: Path) -> list[dict[str, Any]]:
    return [r for r in iter_records(journal_dir) if r.get("type") == "capture"]


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_captures_reasoning_by_reference_in_every_mode(mode, sim, config, store, journal_dir, caplog):
    caplog.set_level(logging.DEBUG)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        message = MODES[mode](sim, request())

    thinking = [b for b in message.content if b.type == "thinking"]
    assert len(thinking) == 1 and CANARY in thinking[0].thinking  # keep mode: the app sees the vendor response
    spans = [s for s in telemetry.spans if s.name == "chat claude-sonnet-4-6"]
    assert len(spans) == 1
    span = spans[0]
    assert span.attributes["gen_ai.operation.name"] == "chat"
    assert span.attributes["gen_ai.provider.name"] == "anthropic"
    assert span.attributes["gen_ai.request.model"] == "claude-sonnet-4-6"
    assert span.attributes["gen_ai.request.stream"] is (mode in STREAMING)
    assert span.attributes["server.address"] == "api.anthropic.sim"
    assert isinstance(span.attributes["gen_ai.usage.output_tokens"], int)
    assert span.attributes["gen_ai.response.finish_reasons"] == ("stop",)

    (event,) = reasoning_events([span])
    assert event["loom.execution.id"] == format(span.context.trace_id, "032x")
    assert event["loom.step.id"] == format(span.context.span_id, "016x")
    assert event["loom.attempt"] == 1
    assert event["loom.reasoning.part.kind"] == ("summary",)
    assert event["loom.reasoning.part.omitted"] == (False,)
    (ref,) = event["loom.reasoning.part.ref"]
    (size,) = event["loom.reasoning.part.size"]
    text = store.get(ref, tenant=None, execution_id=event["loom.execution.id"])
    assert text is not None and text.decode() == thinking[0].thinking and size == len(text)
    assert store.get(ref, tenant=None, execution_id="another-execution") is None
    assert isinstance(event["loom.audit.seq"], int) and len(event["loom.audit.hash"]) == 64

    (record,) = _records(journal_dir)
    assert record["seq"] == event["loom.audit.seq"] and record["hash"] == event["loom.audit.hash"]
    assert record["attributes"]["loom.reasoning.part.digest"] == list(event["loom.reasoning.part.digest"])

    signature = thinking[0].signature
    leaks = find_leaks([CANARY, signature], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text])
    assert leaks == []


@pytest.mark.parametrize("mode", ["sync", "stream", "messages.stream", "async_parse"])
def test_display_summarized_is_a_summary_never_text(mode, sim, config):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        MODES[mode](sim, request(thinking={"type": "adaptive", "display": "summarized"}))
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.kind"] == ("summary",)


@pytest.mark.parametrize("mode", ["sync", "async_stream", "messages.stream"])
def test_display_omitted_records_the_block_and_stores_nothing(mode, sim, config, store):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        message = MODES[mode](sim, request(thinking={"type": "adaptive", "display": "omitted"}))
    assert [b.thinking for b in message.content if b.type == "thinking"] == [""]
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.kind"] == ("summary",)
    assert event["loom.reasoning.part.ref"] == ("",)
    assert event["loom.reasoning.part.digest"] == ("",)
    assert event["loom.reasoning.part.size"] == (0,)
    assert event["loom.reasoning.part.omitted"] == (False,)
    assert len(store) == 0


@pytest.mark.parametrize("mode", ["sync", "stream", "async_messages.stream"])
def test_redacted_and_interleaved_blocks_keep_vendor_order(mode, config, store):
    sim = Simulator(redacted=True, reasoning_text=CANARY)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        message = MODES[mode](sim, request())
    kinds = [b.type for b in message.content]
    assert kinds[:2] == ["thinking", "redacted_thinking"]
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.kind"] == ("summary", "redacted")
    assert event["loom.reasoning.part.ref"][1] == "" and event["loom.reasoning.part.size"][1] == 0
    assert len(store) == 1
    redacted = next(b for b in message.content if b.type == "redacted_thinking")
    assert find_leaks([redacted.data], spans=telemetry.spans) == []


@pytest.mark.parametrize("mode", ["sync", "stream", "messages.stream"])
def test_interleaved_thinking_two_parts_in_order(mode, config, store):
    sim = Simulator(interleaved=True)
    tools = [
        {"name": "get_local_time", "description": "time", "input_schema": {"type": "object", "properties": {}}},
        {"name": "get_weather", "description": "weather", "input_schema": {"type": "object", "properties": {}}},
    ]
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        message = MODES[mode](sim, request(tools=tools))
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use", "thinking", "tool_use"]
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.kind"] == ("summary", "summary")
    texts = [b.thinking for b in message.content if b.type == "thinking"]
    refs = event["loom.reasoning.part.ref"]
    execution_id = event["loom.execution.id"]
    assert [store.get(r, tenant=None, execution_id=execution_id).decode() for r in refs] == texts


@pytest.mark.parametrize("mode", MODE_NAMES)
@runs_on_every_sdk("beta.stream")
def test_no_reasoning_changes_nothing(mode, sim, config, journal_dir):
    kw = request()
    del kw["thinking"]
    bare = MODES[mode](sim, dict(kw))
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        seen = MODES[mode](sim, dict(kw))
    assert seen.model_dump() == bare.model_dump()
    assert reasoning_events(telemetry.spans) == []
    assert _records(journal_dir) == []


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_keep_mode_returns_what_the_bare_sdk_returns(mode, sim, config):
    bare = MODES[mode](sim, request())
    with instrumented(AnthropicInstrumentor(), config=config):
        seen = MODES[mode](sim, request())
    assert seen.model_dump() == bare.model_dump()


class FailingStore(MemoryReasoningStore):
    def put(self, envelope):  # type: ignore[override]
        raise OSError(f"disk full while writing {envelope.ref}")


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_store_failure_fails_the_call_closed(mode, sim, journal_dir, caplog):
    config = ReasoningConfig(store=FailingStore(), journal=journal_dir)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with pytest.raises(ReasoningCaptureError) as info:
            MODES[mode](sim, request())
    assert "fails closed" in str(info.value)
    assert _records(journal_dir) == []
    assert reasoning_events(telemetry.spans) == []
    (span,) = [s for s in telemetry.spans if s.name.startswith("chat")]
    assert span.status.status_code.name == "ERROR"
    assert span.attributes["error.type"] == "ReasoningCaptureError"
    assert find_leaks([CANARY], spans=telemetry.spans, texts=[str(info.value), caplog.text]) == []


@pytest.mark.parametrize("mode", ["sync", "stream", "messages.stream", "async"])
def test_journal_failure_fails_the_call_closed(mode, sim, tmp_path, store):
    journal_dir = tmp_path / "journal"
    config = ReasoningConfig(store=store, journal=Journal(journal_dir))
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        journal_dir.write_text("")  # the location breaks after instrumenting (before, instrument() refuses it)
        with pytest.raises(ReasoningCaptureError, match="journal"):
            MODES[mode](sim, request())
    assert reasoning_events(telemetry.spans) == []


@pytest.mark.parametrize("mode", MODE_NAMES)
@pytest.mark.parametrize("status", [400, 500])
def test_vendor_errors_are_reraised_unchanged(mode, status, sim, config, journal_dir):
    sim.fail_next(status)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with pytest.raises(anthropic.APIStatusError) as info:
            MODES[mode](sim, request())
    expected = anthropic.BadRequestError if status == 400 else anthropic.InternalServerError
    assert type(info.value) is expected
    (span,) = [s for s in telemetry.spans if s.name.startswith("chat")]
    assert span.status.status_code.name == "ERROR"
    assert span.attributes["error.type"] == expected.__qualname__
    assert reasoning_events(telemetry.spans) == [] and _records(journal_dir) == []


@pytest.mark.parametrize("mode", STREAMING)
def test_stream_failing_midway_captures_nothing(mode, sim, config, journal_dir):
    sim.break_stream_after(4)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with pytest.raises(anthropic.APIStatusError):
            MODES[mode](sim, request())
    (span,) = [s for s in telemetry.spans if s.name.startswith("chat")]
    assert span.status.status_code.name == "ERROR"
    assert reasoning_events(telemetry.spans) == [] and _records(journal_dir) == []


def test_stream_closed_early_keeps_what_the_app_received(sim, config, store):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        stream = sim.anthropic_client().messages.create(stream=True, **request())
        received = ""
        for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "thinking_delta":
                received += event.delta.thinking
                if len(received) > 10:
                    break
        stream.close()
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "closed_early"
    (event,) = reasoning_events([span])
    (ref,) = event["loom.reasoning.part.ref"]
    assert store.get(ref, tenant=None, execution_id=event["loom.execution.id"]).decode() == received


def test_helper_stream_closed_early(sim, config):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with sim.anthropic_client().messages.stream(**request()) as stream:
            next(iter(stream))
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "closed_early"


def test_stream_manager_never_entered_sends_and_records_nothing(sim, config, journal_dir):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        manager = sim.anthropic_client().messages.stream(**request())
        del manager
    assert sim.requests == [] and telemetry.spans == () and _records(journal_dir) == []


def test_stream_never_iterated_ends_its_span(sim, config, journal_dir):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        stream = sim.anthropic_client().messages.create(stream=True, **request())
        del stream
        gc.collect()
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "abandoned"
    assert _records(journal_dir) == []


def test_execution_and_step_scopes_name_the_capture(sim, config, store):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with execution("run-42", tenant="acme", principal="alice"), step("plan"):
            MODES["sync"](sim, request())
            MODES["stream"](sim, request())
    first, second = reasoning_events(telemetry.spans)
    assert (first["loom.execution.id"], first["loom.step.id"], first["loom.tenant"]) == ("run-42", "plan", "acme")
    assert (first["loom.attempt"], second["loom.attempt"]) == (1, 2)
    (ref,) = first["loom.reasoning.part.ref"]
    assert store.get(ref, tenant="acme", execution_id="run-42") is not None
    assert store.get(ref, tenant=None, execution_id="run-42") is None
    assert store.get(ref, tenant="other", execution_id="run-42") is None


def test_same_text_in_two_executions_is_two_blobs(sim, config, store):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        for run in ("a", "b"):
            with execution(run):
                MODES["sync"](sim, request())
    first, second = reasoning_events(telemetry.spans)
    assert first["loom.reasoning.part.digest"] == second["loom.reasoning.part.digest"]
    assert first["loom.reasoning.part.ref"] != second["loom.reasoning.part.ref"]
    assert len(store) == 2


def test_no_store_records_omitted_parts(sim, journal_dir):
    with pytest.warns(Warning, match="no reasoning store"):
        with instrumented(AnthropicInstrumentor(), config=ReasoningConfig(journal=journal_dir)) as telemetry:
            MODES["sync"](sim, request())
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.omitted"] == (True,)
    assert event["loom.reasoning.part.ref"] == ("",) and event["loom.reasoning.part.size"][0] > 0


def test_reasoning_kind_values_are_the_contract():
    assert [k.value for k in ReasoningKind] == ["text", "summary", "redacted"]


def test_spans_are_json_serialisable_and_events_flat(sim, config):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        MODES["sync"](sim, request())
    (event,) = reasoning_events(telemetry.spans)
    for key, value in event.items():
        assert isinstance(value, (str, int, bool, tuple)), key
    json.loads(telemetry.spans[0].to_json())


@pytest.mark.parametrize("mode", ["sync", "stream", "messages.stream"])
def test_a_vendor_error_quoting_the_request_leaves_no_text_on_the_span(mode, config):
    """The SDK's exception message may quote the request (here: the canary); the span records the
    error type only, never the message (no exception event, no status description)."""
    http = anthropic_http()  # httpx2, or httpx for anthropic < 1

    body = {"type": "error", "error": {"type": "invalid_request_error", "message": f"bad block: {CANARY}"}}
    transport = http.MockTransport(lambda request: http.Response(400, json=body))
    client = anthropic.Anthropic(
        api_key="k",
        base_url="https://api.anthropic.test",
        max_retries=0,
        http_client=http.Client(transport=transport),
    )
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with pytest.raises(anthropic.BadRequestError) as info:
            if mode == "sync":
                client.messages.create(**request())
            elif mode == "stream":
                client.messages.create(stream=True, **request())
            else:
                with client.messages.stream(**request()):
                    pass
    assert CANARY in str(info.value)  # the application still gets the SDK's own message
    (span,) = [s for s in telemetry.spans if s.name.startswith("chat")]
    assert span.attributes["error.type"] == "BadRequestError"
    assert find_leaks([CANARY], spans=telemetry.spans) == []


def test_helper_closed_before_anything_arrived_captures_nothing(sim, config, journal_dir):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with sim.anthropic_client().messages.stream(**request()):
            pass
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "closed_early"
    assert reasoning_events(telemetry.spans) == [] and _records(journal_dir) == []


@pytest.mark.parametrize("helper", [False, True])
def test_stream_left_mid_thinking_keeps_exactly_what_was_received(helper, sim, config, store):
    """``create(stream=True)`` reads events, ``messages.stream()`` its own snapshot: both keep what the
    application had received when it left the loop, no more, no less."""
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        client = sim.anthropic_client()
        manager = client.messages.stream(**request()) if helper else client.messages.create(stream=True, **request())
        received = ""
        with manager as stream:
            first = next(iter(stream))  # next() first, then a for loop over the same stream
            assert first.type == "message_start"
            for event in stream:
                if event.type == "content_block_delta" and event.delta.type == "thinking_delta":
                    received += event.delta.thinking
                    if len(received) > 10:
                        break
    (event,) = reasoning_events(telemetry.spans)
    (ref,) = event["loom.reasoning.part.ref"]
    assert store.get(ref, tenant=None, execution_id=event["loom.execution.id"]).decode() == received
    assert telemetry.spans[0].attributes["loom.stream.outcome"] == "closed_early"
