"""OpenAiInstrumentor against the real openai SDK: every scenario in every call mode, Chat Completions
(``reasoning_content`` and ``reasoning``) and the Responses API."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
import wrapt
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.trace import SpanKind, StatusCode

from loom_otel.core import FileReasoningStore, MemoryReasoningStore, ReasoningConfig, ReasoningKind
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.openai.helpers import CHAT_MODEL, MODES, RESPONSES_MODEL, STREAMING, THOUGHT, run

APIS = ("chat", "responses")
MODELS = {"chat": CHAT_MODEL, "responses": RESPONSES_MODEL}
KINDS = {"chat": "text", "responses": "summary"}


def _assert_span(span, api: str, *, stream: bool, provider: str = "openai") -> None:
    attrs = span.attributes
    assert span.name == f"chat {MODELS[api]}"
    assert span.kind is SpanKind.CLIENT
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == provider
    assert attrs["gen_ai.request.model"] == MODELS[api]
    assert attrs["gen_ai.request.stream"] is stream
    assert isinstance(attrs["server.address"], str)
    assert type(attrs["server.port"]) is int
    assert isinstance(attrs["gen_ai.response.id"], str)
    assert attrs["gen_ai.response.model"] == MODELS[api]
    assert isinstance(attrs["gen_ai.response.finish_reasons"], tuple)


def _assert_event(span, event: dict, api: str) -> None:
    assert len(event["loom.execution.id"]) == 32
    assert event["loom.step.id"] == format(span.context.span_id, "016x")
    assert type(event["loom.attempt"]) is int
    assert event["gen_ai.request.model"] == MODELS[api]
    assert event["loom.reasoning.part.kind"] == (KINDS[api],)
    assert event["loom.reasoning.part.digest"] == (hashlib.sha256(THOUGHT.encode()).hexdigest(),)
    assert event["loom.reasoning.part.size"] == (len(THOUGHT.encode()),)
    assert event["loom.reasoning.part.omitted"] == (False,)
    assert all(type(r) is str and r for r in event["loom.reasoning.part.ref"])


def _text(store: MemoryReasoningStore, event: dict, index: int = 0) -> str:
    blob = store.get(event["loom.reasoning.part.ref"][index], tenant=None, execution_id=event["loom.execution.id"])
    assert blob is not None
    return blob.decode()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", APIS)
def test_reasoning_captured_in_every_mode(api, mode, make, config, store, completed):
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        seen = run(api, mode, make)
    (span,) = telemetry.spans
    _assert_span(span, api, stream=mode in STREAMING)
    (event,) = reasoning_events(telemetry.spans)
    _assert_event(span, event, api)
    assert _text(store, event) == THOUGHT == seen
    ((reasoning,),) = completed
    if api == "responses":
        assert isinstance(reasoning.signature, str)  # encrypted_content, kept for continuation
        assert reasoning.signature
    else:
        assert reasoning.signature is None
    if api == "chat" and mode in ("sync", "async", "parse", "async_parse"):
        assert type(span.attributes["gen_ai.usage.reasoning.output_tokens"]) is int


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", APIS)
def test_vendor_error_reraised_unchanged(api, mode, sim, config, store):
    sim.fail_next(429)
    make = lambda is_async: sim.async_openai_client() if is_async else sim.openai_client()  # noqa: E731
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry, pytest.raises(openai.RateLimitError):
        run(api, mode, make)
    (span,) = telemetry.spans
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "RateLimitError"
    assert reasoning_events(telemetry.spans) == []
    assert store._blobs == {}


def test_parity_stream_and_complete(config, store):
    """Same request, streamed and complete: equal parts; the streamed text equals the stored blob."""
    sim = Simulator(reasoning_text=THOUGHT * 3, stream_chunks=9, strict=False)
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        seen = {}
        for api in APIS:
            for mode in ("sync", "stream"):
                seen[api, mode] = run(api, mode, lambda _: sim.openai_client(), tools=True)
    events = reasoning_events(telemetry.spans)
    for complete, streamed in (events[0:2], events[2:4]):
        for key in ("kind", "digest", "size", "omitted"):
            assert complete[f"loom.reasoning.part.{key}"] == streamed[f"loom.reasoning.part.{key}"], key
    assert seen["chat", "stream"] == _text(store, events[1]) == seen["chat", "sync"] == THOUGHT * 3
    assert seen["responses", "stream"] == _text(store, events[3]) == seen["responses", "sync"]


def _plain(request: httpx2.Request) -> httpx2.Response:
    body = json.loads(request.content)
    head = {"id": "chatcmpl-plain", "created": 1, "model": body["model"]}
    if not body.get("stream"):
        message = {"role": "assistant", "content": "Hello."}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        payload = {**head, "object": "chat.completion", "choices": [choice]}
        return httpx2.Response(200, json=payload)
    frames = [
        {**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": f}]}
        for d, f in (({"role": "assistant", "content": "Hel"}, None), ({"content": "lo."}, "stop"))
    ]
    sse = "".join(f"data: {json.dumps(f)}\n\n" for f in frames) + "data: [DONE]\n\n"
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=sse.encode())


async def _async_plain(request: httpx2.Request) -> httpx2.Response:
    return _plain(request)


def _plain_client(is_async: bool) -> Any:
    if is_async:
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(_async_plain))
        return openai.AsyncOpenAI(api_key="x", base_url="https://api.openai.test/v1", http_client=http)
    http = httpx2.Client(transport=httpx2.MockTransport(_plain))
    return openai.OpenAI(api_key="x", base_url="https://api.openai.test/v1", http_client=http)


@pytest.mark.parametrize("mode", ["sync", "async", "parse"])
def test_response_without_reasoning_untouched(mode, config):
    bare = _plain_client(False).chat.completions.create if mode == "sync" else None
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        assert run("chat", mode, _plain_client) == ""
        if bare is not None:
            returned = _plain_client(False).chat.completions.create(model=CHAT_MODEL, messages=[])
    assert reasoning_events(telemetry.spans) == []
    assert all(s.status.status_code is StatusCode.UNSET for s in telemetry.spans)
    if bare is not None:
        assert type(returned) is openai.types.chat.ChatCompletion
        assert returned == bare(model=CHAT_MODEL, messages=[])


@pytest.mark.parametrize("mode", ["stream", "async_stream", "helper"])
def test_stream_without_reasoning_has_no_event(mode, config):
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        assert run("chat", mode, _plain_client) == ""
    assert len(telemetry.spans) == 1
    assert reasoning_events(telemetry.spans) == []


def test_deepseek_provider_from_base_url(config):
    sim = Simulator(reasoning_text=THOUGHT)
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        sim.openai_client(base_url="https://api.deepseek.com/v1").chat.completions.create(
            model=CHAT_MODEL, messages=[{"role": "user", "content": "Hi"}]
        )
    (span,) = telemetry.spans
    assert span.attributes["gen_ai.provider.name"] == "deepseek"
    assert span.attributes["server.address"] == "api.deepseek.com"
    (event,) = reasoning_events(telemetry.spans)
    assert event["gen_ai.provider.name"] == "deepseek"


def test_responses_without_summary_is_an_empty_part(config, completed):
    """No summary requested: the reasoning item still exists (encrypted): one part with no text."""
    sim = Simulator(reasoning_text=THOUGHT)
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        sim.openai_client().responses.create(model=RESPONSES_MODEL, input="Hi")
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.kind"] == ("summary",)
    assert event["loom.reasoning.part.size"] == (0,)
    assert event["loom.reasoning.part.ref"] == ("",)
    assert completed[0][0].kind is ReasoningKind.SUMMARY
    assert isinstance(completed[0][0].signature, str)


def test_raw_response_parsed_once(config, store):
    sim = Simulator(reasoning_text=THOUGHT)
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        raw = sim.openai_client().chat.completions.with_raw_response.create(
            model=CHAT_MODEL, messages=[{"role": "user", "content": "Hi"}]
        )
    assert raw.parse().choices[0].message.model_extra["reasoning_content"] == THOUGHT
    (event,) = reasoning_events(telemetry.spans)
    assert _text(store, event) == THOUGHT


# --- streams: closed early, failing mid-way, never entered ----------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_stream_closed_early(api, config, store):
    sim = Simulator(reasoning_text=THOUGHT, stream_chunks=4)
    client = sim.openai_client()
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        if api == "chat":
            stream = client.chat.completions.create(
                model=CHAT_MODEL, messages=[{"role": "user", "content": "Hi"}], stream=True
            )
            chunks = [next(stream) for _ in range(3)]
            received = "".join(c.choices[0].delta.model_extra.get("reasoning_content") or "" for c in chunks)
        else:
            stream = client.responses.create(
                model=RESPONSES_MODEL, input="Hi", reasoning={"summary": "auto"}, stream=True
            )
            events = [next(stream) for _ in range(6)]
            received = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
        stream.close()
    assert received
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "closed_early"
    (event,) = reasoning_events(telemetry.spans)
    assert _text(store, event) == received


@pytest.mark.parametrize("mode", ["stream", "async_stream", "helper", "async_helper"])
@pytest.mark.parametrize("api", APIS)
def test_stream_failing_midway(api, mode, config, store):
    sim = Simulator(reasoning_text=THOUGHT, stream_chunks=4)
    sim.break_stream_after(3)
    make = lambda is_async: sim.async_openai_client() if is_async else sim.openai_client()  # noqa: E731
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry, pytest.raises(Exception) as info:
        run(api, mode, make)
    (span,) = telemetry.spans
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == type(info.value).__qualname__
    assert reasoning_events(telemetry.spans) == []
    assert store._blobs == {}


def test_stream_helpers_never_entered(config):
    sim = Simulator(reasoning_text=THOUGHT)
    client, aclient = sim.openai_client(), sim.async_openai_client()
    messages = [{"role": "user", "content": "Hi"}]

    async def never() -> None:
        # An async stream manager holds the un-awaited create() coroutine; dropped unentered, Python warns.
        # The bare SDK warns the same ("coroutine 'AsyncCompletions.create' was never awaited").
        with pytest.warns(RuntimeWarning, match="was never awaited") as unawaited:
            aclient.chat.completions.stream(model=CHAT_MODEL, messages=messages)
            aclient.responses.stream(model=RESPONSES_MODEL, input="Hi")  # each freed at once: no gc needed
        assert len(unawaited) == 2

    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        client.chat.completions.stream(model=CHAT_MODEL, messages=messages)
        client.responses.stream(model=RESPONSES_MODEL, input="Hi")
        asyncio.run(never())
    assert telemetry.spans == ()
    assert sim.requests == []


# --- canary ---------------------------------------------------------------------------------------------


def test_canary_never_exported(tmp_path: Path, caplog):
    caplog.set_level(logging.DEBUG)
    sim = Simulator(reasoning_text=THOUGHT)
    journal = tmp_path / "journal"
    config = ReasoningConfig(store=FileReasoningStore(tmp_path / "store"), journal=journal)
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        client = sim.openai_client()
        run("chat", "sync", lambda _: client)
        run("chat", "stream", lambda _: client)
        response = client.responses.create(
            model=RESPONSES_MODEL, input="Hi", reasoning={"summary": "auto"}, include=["reasoning.encrypted_content"]
        )
        run("responses", "stream", lambda _: client)
        sim.fail_next(500)
        with pytest.raises(openai.InternalServerError) as failure:
            run("responses", "sync", lambda _: client)
    encrypted = [item.encrypted_content for item in response.output if item.type == "reasoning"]
    assert encrypted[0]
    exported = " ".join(
        f"{span.to_json()} {[(e.name, dict(e.attributes)) for e in span.events]}" for span in telemetry.spans
    )
    journal_text = " ".join(p.read_text() for p in journal.rglob("*") if p.is_file())
    assert journal_text
    logs = " ".join(r.getMessage() for r in caplog.records)
    for secret in [THOUGHT, "CANARY", *encrypted]:
        for where in (exported, journal_text, logs, str(failure.value), repr(failure.value)):
            assert secret not in where


def test_suppressed_and_uninstrumented(config):
    sim = Simulator(reasoning_text=THOUGHT)
    client = sim.openai_client()
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        with suppress_instrumentation():
            run("chat", "sync", lambda _: client)
        assert telemetry.spans == ()
    run("chat", "sync", lambda _: client)
    assert telemetry.spans == ()
    assert not isinstance(openai.resources.chat.completions.completions.Completions.create, wrapt.ObjectProxy)


def test_import_without_google_genai():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['google.genai'] = None; sys.modules['google'] = None\n"
        "from loom_otel.instrumentation.openai import OpenAiInstrumentor\n"
        "print(OpenAiInstrumentor.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "OpenAiInstrumentor"
