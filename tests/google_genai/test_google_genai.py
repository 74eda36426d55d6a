"""GoogleGenAiInstrumentor against the real google-genai SDK: every scenario in every call mode."""

from __future__ import annotations

import asyncio
import base64
import gc
import hashlib
import logging
from pathlib import Path

import pytest
import wrapt
from google import genai
from google.genai import errors
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.trace import SpanKind, StatusCode

from loom_otel.core import FileReasoningStore, MemoryReasoningStore, ReasoningConfig, ReasoningKind
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.instrumentation.google_genai._extractors import ResponseAccumulator, request_info
from loom_otel.testing import Telemetry, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.google_genai.helpers import (
    CHATS,
    MODEL,
    MODES,
    PLAIN_RESPONSE,
    STREAMING,
    THOUGHT,
    get_weather,
    run,
    thinking,
    wire_client,
)

HEX32 = 32
HEX16 = 16


def _assert_span(span, *, stream: bool, provider: str = "gcp.gemini", finish: str = "stop") -> None:
    attrs = span.attributes
    assert span.name == f"generate_content {MODEL}"
    assert span.kind is SpanKind.CLIENT
    assert attrs["gen_ai.operation.name"] == "generate_content"
    assert attrs["gen_ai.provider.name"] == provider
    assert attrs["gen_ai.request.model"] == MODEL
    assert attrs["gen_ai.request.stream"] is stream
    assert isinstance(attrs["server.address"], str)
    assert isinstance(attrs["server.port"], int)
    assert isinstance(attrs["gen_ai.response.id"], str)
    assert attrs["gen_ai.response.model"] == MODEL
    assert attrs["gen_ai.response.finish_reasons"] == (finish,)
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.reasoning.output_tokens"):
        assert type(attrs[key]) is int, key


def _assert_event(span, event: dict, parts: int) -> None:
    assert isinstance(event["loom.execution.id"], str)
    assert len(event["loom.execution.id"]) == HEX32
    assert event["loom.step.id"] == format(span.context.span_id, "016x")
    assert type(event["loom.attempt"]) is int
    assert event["gen_ai.provider.name"] == span.attributes["gen_ai.provider.name"]
    assert event["gen_ai.request.model"] == MODEL
    assert event["gen_ai.response.model"] == MODEL
    assert event["loom.reasoning.part.kind"] == ("summary",) * parts
    for key, kind in (
        ("loom.reasoning.part.ref", str),
        ("loom.reasoning.part.digest", str),
        ("loom.reasoning.part.size", int),
        ("loom.reasoning.part.omitted", bool),
    ):
        assert isinstance(event[key], tuple)
        assert len(event[key]) == parts
        assert all(type(v) is kind for v in event[key]), key
    assert isinstance(event["loom.audit.origin"], str)
    assert type(event["loom.audit.seq"]) is int
    assert isinstance(event["loom.audit.hash"], str)


def _text(store: MemoryReasoningStore, event: dict, index: int) -> str:
    blob = store.get(event["loom.reasoning.part.ref"][index], tenant=None, execution_id=event["loom.execution.id"])
    assert blob is not None
    return blob.decode()


@pytest.mark.parametrize("mode", MODES)
def test_thoughts_captured_in_every_mode(mode, sim, client_of, config, store, completed):
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        outcome = run(mode, client_of(sim))
    (span,) = telemetry.spans
    _assert_span(span, stream=mode in STREAMING)
    assert span.status.status_code is StatusCode.UNSET
    (event,) = reasoning_events(telemetry.spans)
    _assert_event(span, event, 1)
    assert _text(store, event, 0) == THOUGHT == outcome.thought_text
    assert event["loom.reasoning.part.digest"] == (hashlib.sha256(THOUGHT.encode()).hexdigest(),)
    assert event["loom.reasoning.part.size"] == (len(THOUGHT.encode()),)
    (reasonings,) = completed
    assert [r.kind for r in reasonings] == [ReasoningKind.SUMMARY]
    signature = reasonings[0].signature
    assert isinstance(signature, bytes)
    assert signature  # the signature on the last part of a text answer, recorded with the thought summary


@pytest.mark.parametrize("mode", MODES)
def test_automatic_function_calling_two_hops(mode, sim, client_of, config, store, completed):
    """Every hop's thoughts and signatures are captured. ``Models`` runs AFC inside one call (one span);
    chats in google-genai 3.6 run their own AFC loop over ``Models.generate_content``: one span per hop."""
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        outcome = run(mode, client_of(sim), tools=[get_weather])
    assert "Based on the tool results" in "".join(
        p.text or "" for i in outcome.items for p in i.candidates[0].content.parts if not p.thought
    )
    gemini_requests = [r for r in sim.requests if r.vendor == "gemini"]
    assert len(gemini_requests) == 2
    spans = telemetry.spans
    events = reasoning_events(spans)
    if mode in CHATS:
        assert len(spans) == 2
        assert [e["loom.reasoning.part.kind"] for e in events] == [("summary",), ("summary",)]
    else:
        (span,) = spans
        _assert_span(span, stream=mode in STREAMING)
        (event,) = events
        _assert_event(span, event, 2)
        assert [_text(store, event, i) for i in range(2)] == [THOUGHT, THOUGHT]
    flat = [r for call in completed for r in call]
    assert len(flat) == 2
    assert all(isinstance(r.signature, bytes) and r.signature for r in flat)
    assert flat[0].signature != flat[1].signature  # hop 1 signed its function call, hop 2 its answer


@pytest.mark.parametrize("mode", MODES)
def test_vendor_error_reraised_unchanged(mode, sim, config, store):
    sim.fail_next(400)
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry, pytest.raises(errors.ClientError) as info:
        run(mode, sim.genai_client())
    assert info.value.code == 400
    (span,) = telemetry.spans
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "ClientError"
    assert reasoning_events(telemetry.spans) == []
    assert store._blobs == {}


@pytest.mark.parametrize("mode", MODES)
def test_response_without_reasoning_untouched(mode, wire, config):
    bare = run(mode, wire_client(wire, body=PLAIN_RESPONSE)).items
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        seen = run(mode, wire_client(wire, body=PLAIN_RESPONSE)).items
    assert [type(i) for i in seen] == [type(i) for i in bare]
    assert [i.model_dump(exclude={"sdk_http_response"}) for i in seen] == [
        i.model_dump(exclude={"sdk_http_response"}) for i in bare
    ]
    assert len(telemetry.spans) == 1
    assert reasoning_events(telemetry.spans) == []


@pytest.mark.parametrize("mode", ["sync", "stream", "async", "async_stream"])
def test_signature_without_thoughts_is_an_empty_summary(mode, sim, config, store, completed):
    """``include_thoughts`` off: the model still signs its answer; the trail shows a part with no text."""
    client = sim.genai_client()
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        run(mode, client, thinking_config=None)
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.kind"] == ("summary",)
    assert event["loom.reasoning.part.ref"] == ("",)
    assert event["loom.reasoning.part.digest"] == ("",)
    assert event["loom.reasoning.part.size"] == (0,)
    assert event["loom.reasoning.part.omitted"] == (False,)
    assert isinstance(completed[0][0].signature, bytes)


def test_parity_stream_and_complete(config, store):
    """Same request, streamed and complete: equal parts; the streamed thought text equals the blob."""
    sim = Simulator(reasoning_text=THOUGHT, stream_chunks=7, strict=False)
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        complete = run("sync", sim.genai_client())
        streamed = run("stream", sim.genai_client())
        run("sync", sim.genai_client(), tools=[get_weather])
        run("stream", sim.genai_client(), tools=[get_weather])
    assert len(streamed.items) > 7
    first, second, afc_complete, afc_streamed = reasoning_events(telemetry.spans)
    for a, b in ((first, second), (afc_complete, afc_streamed)):
        for key in ("kind", "digest", "size", "omitted"):
            assert a[f"loom.reasoning.part.{key}"] == b[f"loom.reasoning.part.{key}"], key
    assert streamed.thought_text == _text(store, second, 0) == complete.thought_text


@pytest.mark.parametrize("mode", MODES)
def test_wire_fixtures_in_every_mode(mode, wire, config, store, completed):
    """``gemini_thought_function_call.json`` (complete) and ``gemini_stream_thoughts.sse`` (streamed): one
    signed summary; the signature is the one on the first of the parallel function calls."""
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        outcome = run(mode, wire_client(wire))
    (span,) = telemetry.spans
    _assert_span(span, stream=mode in STREAMING, finish="tool_call")  # STOP after function calls
    (event,) = reasoning_events(telemetry.spans)
    _assert_event(span, event, 1)
    assert _text(store, event, 0) == outcome.thought_text
    signed = [p for i in outcome.items for p in i.candidates[0].content.parts if p.thought_signature]
    assert len(signed) == 1
    assert signed[0].function_call is not None
    ((reasoning,),) = completed
    assert reasoning.signature == signed[0].thought_signature
    assert span.attributes["gen_ai.usage.reasoning.output_tokens"] == (171 if mode in STREAMING else 189)


def test_fold_rules_on_text_signature_fixture(wire):
    """Thought, text, then an empty text part carrying the signature: one signed summary."""
    from google.genai import types

    lines = (wire / "gemini_stream_text_signature.sse").read_text().split("\n\n")
    chunks = [types.GenerateContentResponse.model_validate_json(line[len("data: ") :]) for line in lines if line]
    request = request_info(None, {"model": MODEL}, stream=True)
    accumulator = ResponseAccumulator(request)
    deltas = [d for chunk in chunks for d in accumulator.feed(chunk)]
    (reasoning,), info = accumulator.result()
    assert reasoning.kind is ReasoningKind.SUMMARY
    assert reasoning.text == "".join(t for _, t in deltas)
    assert reasoning.signature == chunks[-1].candidates[0].content.parts[0].thought_signature
    assert info.attributes["gen_ai.usage.reasoning.output_tokens"] == 54
    # A second signature with no new thought gets its own empty summary part.
    accumulator.feed(chunks[-1])
    reasonings, _ = accumulator.result()
    assert [(r.kind, r.text) for r in reasonings] == [
        (ReasoningKind.SUMMARY, reasoning.text),
        (ReasoningKind.SUMMARY, ""),
    ]


def test_vertex_ai_provider(wire, config):
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        run("sync", wire_client(wire, vertexai=True))
    (span,) = telemetry.spans
    assert span.attributes["gen_ai.provider.name"] == "gcp.vertex_ai"
    (event,) = reasoning_events(telemetry.spans)
    assert event["gen_ai.provider.name"] == "gcp.vertex_ai"


# --- streams: closed early, failing mid-way, never iterated ---------------------------------------------


def test_stream_closed_early_keeps_what_was_received(sim, config, store):
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        client = sim.genai_client()  # keep a reference: a collected client closes its HTTP client
        stream = client.models.generate_content_stream(model=MODEL, contents="Hi", config=thinking())
        first = next(stream)
        stream.close()
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "closed_early"
    (event,) = reasoning_events(telemetry.spans)
    assert _text(store, event, 0) == first.candidates[0].content.parts[0].text


async def test_async_stream_closed_early(sim, config, store):
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        client = sim.genai_client()
        aio = client.aio
        stream = await aio.models.generate_content_stream(model=MODEL, contents="Hi", config=thinking())
        first = await stream.__anext__()
        await stream.aclose()
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "closed_early"
    (event,) = reasoning_events(telemetry.spans)
    assert _text(store, event, 0) == first.candidates[0].content.parts[0].text


def test_stream_dropped_unclosed_is_abandoned_as_other_streams(sim, config, journal_dir):
    """A stream the application drops after its first chunk, without closing it, ends ``abandoned`` with
    nothing captured, as Anthropic's and OpenAI's stream objects do (``DeferredSend.stream``); a closed
    one is ``closed_early`` (above)."""
    config = ReasoningConfig(store=config.store, journal=journal_dir)
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        client = sim.genai_client()
        stream = client.models.generate_content_stream(model=MODEL, contents="Hi", config=thinking())
        assert next(stream).candidates
        del stream
        gc.collect()
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "abandoned"
    assert reasoning_events(telemetry.spans) == []


async def test_async_stream_dropped_unclosed_is_abandoned(sim, config):
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        client = sim.genai_client()
        stream = await client.aio.models.generate_content_stream(model=MODEL, contents="Hi", config=thinking())
        assert (await stream.__anext__()).candidates
        del stream
        gc.collect()
        for _ in range(5):  # the loop finalizes the dropped async generators
            await asyncio.sleep(0)
        gc.collect()
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "abandoned"
    assert reasoning_events(telemetry.spans) == []


@pytest.mark.parametrize("mode", ["stream", "async_stream", "chat_stream", "async_chat_stream"])
def test_stream_failing_midway(mode, sim, config, store):
    sim.break_stream_after(2)
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry, pytest.raises(Exception) as info:
        run(mode, sim.genai_client())
    (span,) = telemetry.spans
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == type(info.value).__qualname__
    assert reasoning_events(telemetry.spans) == []
    assert store._blobs == {}


def test_streams_never_iterated_record_nothing(sim, config):
    client = sim.genai_client()

    async def never() -> None:
        await client.aio.models.generate_content_stream(model=MODEL, contents="Hi", config=thinking())

    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        client.models.generate_content_stream(model=MODEL, contents="Hi", config=thinking())
        client.chats.create(model=MODEL).send_message_stream("Hi")
        asyncio.run(never())
    assert telemetry.spans == ()
    assert sim.requests == []


# --- canary: nothing readable or replayable leaves through telemetry, logs, journal or errors ------------


def test_canary_never_exported(sim, tmp_path: Path, caplog):
    caplog.set_level(logging.DEBUG)
    store = FileReasoningStore(tmp_path / "store")
    journal = tmp_path / "journal"
    config = ReasoningConfig(store=store, journal=journal)
    signatures: list[bytes] = []
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        for mode in ("sync", "stream"):
            outcome = run(mode, sim.genai_client(), tools=[get_weather])
            for item in outcome.items:
                for history in [item.automatic_function_calling_history or [], [item.candidates[0].content]]:
                    for content in history:
                        signatures += [p.thought_signature for p in content.parts or () if p.thought_signature]
        sim.fail_next(500)
        with pytest.raises(errors.ServerError) as failure:
            run("sync", sim.genai_client())
    assert signatures
    secrets = [THOUGHT, "CANARY"]
    for signature in signatures:
        secrets += [base64.b64encode(signature).decode(), base64.urlsafe_b64encode(signature).decode()]
        secrets += [base64.b64encode(signature).decode().rstrip("="), signature.hex()]
    exported = " ".join(
        f"{span.to_json()} {[(e.name, dict(e.attributes)) for e in span.events]}" for span in telemetry.spans
    )
    journal_text = " ".join(p.read_text() for p in journal.rglob("*") if p.is_file())
    assert journal_text
    logs = " ".join(r.getMessage() for r in caplog.records)
    for secret in secrets:
        assert secret not in exported
        assert secret not in journal_text
        assert secret not in logs
        assert secret not in str(failure.value)
        assert secret not in repr(failure.value)


# --- instrumentor ---------------------------------------------------------------------------------------


def test_suppressed_and_uninstrumented(sim, config):
    client = sim.genai_client()
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        with suppress_instrumentation():
            run("sync", client)
            run("stream", client)
        assert telemetry.spans == ()
    run("sync", client)
    run("stream", client)
    assert telemetry.spans == ()
    assert not isinstance(genai.models.Models.generate_content, wrapt.ObjectProxy)
    assert not isinstance(genai.models.Models._generate_content, wrapt.ObjectProxy)


def test_disabled_by_environment(sim, telemetry: Telemetry):
    with instrumented(GoogleGenAiInstrumentor(), telemetry=telemetry, environ={"LOOM_OTEL_REASONING": "false"}) as seen:
        run("sync", sim.genai_client())
    assert seen.spans == ()
