"""Raw responses of Chat Completions and the Responses API (``with_raw_response``,
``with_streaming_response``), streamed and whole, sync and async: captured like any other response, and in
redact mode no readable reasoning reaches the application, however it reads the body."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
from typing import Any

import httpx2
import openai
import pytest
from opentelemetry.trace import StatusCode

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.core.exceptions import ReasoningCaptureError
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.openai.helpers import CHAT_MODEL, RESPONSES_MODEL

APIS = ("chat", "responses")
CANARY = "CANARY-51c0-" * 8
"""Every streamed piece of it holds ``CANARY`` (4 pieces of 96 characters)."""
READS = ("iter_lines", "iter_bytes", "iter_text", "read", "text", "parse")
ASYNC_READS = ("aiter_lines", "aiter_bytes", "aread", "aparse")


def _kwargs(api: str) -> dict[str, Any]:
    if api == "chat":
        return {"model": CHAT_MODEL, "messages": [{"role": "user", "content": "Which is cheaper?"}]}
    return {"model": RESPONSES_MODEL, "input": "Which is cheaper?", "reasoning": {"summary": "auto"}}


def _seen(value: Any) -> str:
    """What the application read, as one text (parsed chunks as their JSON)."""
    if isinstance(value, list):
        return "\n".join(chunk.model_dump_json() for chunk in value)
    return value if isinstance(value, str) else value.decode()


def _read(raw: Any, how: str) -> Any:
    if how == "iter_lines":
        return "\n".join(raw.iter_lines())
    if how == "iter_bytes":
        return b"".join(raw.iter_bytes())
    if how == "iter_text":
        return "".join(raw.iter_text())
    if how == "read":
        return raw.read()
    if how == "text":
        return raw.text()
    return list(raw.parse())


async def _aread(raw: Any, how: str) -> Any:
    if how == "aiter_lines":
        return "\n".join([line async for line in raw.iter_lines()])
    if how == "aiter_bytes":
        return b"".join([chunk async for chunk in raw.iter_bytes()])
    if how == "aread":
        return await raw.read()
    return [chunk async for chunk in await raw.parse()]


def _streamed(sim: Simulator, api: str, how: str) -> Any:
    """One ``with_streaming_response.create(stream=True)`` call read ``how``; what the application read."""
    if how in ASYNC_READS:

        async def go() -> Any:
            client = sim.async_openai_client()
            resource: Any = client.chat.completions if api == "chat" else client.responses
            async with resource.with_streaming_response.create(stream=True, **_kwargs(api)) as raw:
                return await _aread(raw, how)

        return asyncio.run(go())
    client = sim.openai_client()
    resource: Any = client.chat.completions if api == "chat" else client.responses
    with resource.with_streaming_response.create(stream=True, **_kwargs(api)) as raw:
        return _read(raw, how)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _sim(text: str, field: str = "reasoning_content") -> Simulator:
    return Simulator(reasoning_text=text, stream_chunks=4, reasoning_field=field)


@pytest.mark.parametrize("how", READS + ASYNC_READS)
@pytest.mark.parametrize("api", APIS)
def test_streamed_raw_response_captured_and_bare_in_keep_mode(api, how, config, store):
    sim = _sim(CANARY)
    bare = _seen(_streamed(sim, api, how))
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        seen = _seen(_streamed(sim, api, how))
    assert seen == bare
    assert "CANARY" in seen
    (span,) = telemetry.spans
    assert "loom.stream.outcome" not in span.attributes
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.digest"] == (_digest(CANARY),)
    blob = store.get(event["loom.reasoning.part.ref"][0], tenant=None, execution_id=event["loom.execution.id"])
    assert blob == CANARY.encode()


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
@pytest.mark.parametrize("how", READS + ASYNC_READS)
@pytest.mark.parametrize("api", APIS)
def test_streamed_raw_response_redacted(api, how, field, store, journal_dir):
    sim = _sim(CANARY, field)
    config = ReasoningConfig(store=store, journal=journal_dir, transcript="redact")
    bare = _streamed(sim, api, how)
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        seen = _streamed(sim, api, how)
    assert "CANARY" not in _seen(seen)
    if how in ("parse", "aparse"):  # the same chunks, their reasoning blank
        assert (
            len(seen) >= len(bare) - 1
            and [c.type if api == "responses" else c.id for c in seen][:3]
            == [c.type if api == "responses" else c.id for c in bare][:3]
        )
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.digest"] == (_digest(CANARY),)
    assert find_leaks(["CANARY"], spans=telemetry.spans, directories=[journal_dir]) == []


@pytest.mark.parametrize("api", APIS)
def test_streamed_raw_response_closed_early(api, config, store):
    sim = _sim(CANARY)
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        client = sim.openai_client()
        resource: Any = client.chat.completions if api == "chat" else client.responses
        with resource.with_streaming_response.create(stream=True, **_kwargs(api)) as raw:
            received = [line for line in _until_two_pieces(raw.iter_lines())]
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "closed_early"
    (event,) = reasoning_events(telemetry.spans)
    blob = store.get(event["loom.reasoning.part.ref"][0], tenant=None, execution_id=event["loom.execution.id"])
    assert blob is not None
    assert CANARY.startswith(blob.decode())
    assert len(CANARY) > len(blob.decode()) >= 2 * len("CANARY-51c0-")
    assert "CANARY" in "".join(received)


def _until_two_pieces(lines: Any) -> Any:
    """The body's lines up to the second that holds a piece of the reasoning."""
    pieces = 0
    for line in lines:
        yield line
        pieces += "CANARY" in line
        if pieces == 2:
            return


@pytest.mark.parametrize("api", APIS)
def test_streamed_raw_response_entered_and_left_unread(api, config, store):
    sim = _sim(CANARY)
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        client = sim.openai_client()
        resource: Any = client.chat.completions if api == "chat" else client.responses
        with resource.with_streaming_response.create(stream=True, **_kwargs(api)):
            pass
        never = resource.with_streaming_response.create(stream=True, **_kwargs(api))  # never entered: no call
        del never
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "closed_early"
    assert reasoning_events(telemetry.spans) == []
    assert len(sim.requests) == 1


@pytest.mark.parametrize("how", ["iter_lines", "parse", "aiter_lines", "aparse"])
@pytest.mark.parametrize("api", APIS)
def test_streamed_raw_response_failing_midway(api, how, config, store):
    sim = _sim(CANARY)
    sim.break_stream_after(3)
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry, pytest.raises(Exception) as info:
        _streamed(sim, api, how)
    (span,) = telemetry.spans
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"]
    assert reasoning_events(telemetry.spans) == []
    assert "CANARY" not in str(info.value)


@pytest.mark.parametrize("api", APIS)
def test_raw_stream_of_with_raw_response_redacted(api, store, journal_dir):
    """``with_raw_response.create(stream=True)``: the body is unread too; its parsed stream is redacted."""
    config = ReasoningConfig(store=store, journal=journal_dir, transcript="redact")
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        client = _sim(CANARY).openai_client()
        resource: Any = client.chat.completions if api == "chat" else client.responses
        chunks = list(resource.with_raw_response.create(stream=True, **_kwargs(api)).parse())
    assert chunks
    assert "CANARY" not in _seen(chunks)
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.digest"] == (_digest(CANARY),)


@pytest.mark.parametrize("is_async", [False, True])
@pytest.mark.parametrize("api", APIS)
def test_streaming_response_of_a_whole_response(api, is_async, store, journal_dir):
    """``with_streaming_response.create()`` without ``stream``: captured, and redacted in every read."""
    config = ReasoningConfig(store=store, journal=journal_dir, transcript="redact")
    sim = _sim(CANARY)

    async def aread() -> tuple[bytes, Any]:
        client = sim.async_openai_client()
        resource: Any = client.chat.completions if api == "chat" else client.responses
        async with resource.with_streaming_response.create(**_kwargs(api)) as raw:
            return await raw.read(), await raw.parse()

    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        if is_async:
            body, parsed = asyncio.run(aread())
        else:
            client = sim.openai_client()
            resource: Any = client.chat.completions if api == "chat" else client.responses
            with resource.with_streaming_response.create(**_kwargs(api)) as raw:
                body, parsed = raw.read(), raw.parse()
    assert json.loads(body)["model"]
    assert "CANARY" not in body.decode()
    assert "CANARY" not in parsed.model_dump_json()
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.digest"] == (_digest(CANARY),)
    assert find_leaks(["CANARY"], spans=telemetry.spans, directories=[journal_dir]) == []


class _BrokenStore(MemoryReasoningStore):
    def put(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError("disk full")


@pytest.mark.parametrize("how", ["iter_lines", "parse", "aiter_lines", "aparse"])
def test_streamed_raw_response_capture_fails_closed(how, journal_dir):
    """A store that cannot keep the reasoning: the application reading the body gets the capture error
    (from the SDK's parsed stream, as the cause of the error it raises for a failed read)."""
    config = ReasoningConfig(store=_BrokenStore(), journal=journal_dir)
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry, pytest.raises(Exception) as info:
        _streamed(_sim(CANARY), "chat", how)
    error = info.value
    assert isinstance(error, ReasoningCaptureError) or isinstance(error.__cause__, ReasoningCaptureError)
    (span,) = telemetry.spans
    assert span.attributes["error.type"] == "ReasoningCaptureError"
    assert "CANARY" not in str(error)


class _Gzipped(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """A body sent gzip-encoded, in pieces, as a server streams it."""

    def __init__(self, body: bytes) -> None:
        data = gzip.compress(body)
        self._pieces = [data[i : i + 64] for i in range(0, len(data), 64)]

    def __iter__(self) -> Any:
        yield from self._pieces

    async def __aiter__(self) -> Any:
        for piece in self._pieces:
            yield piece


def _gzipped_client(sim: Simulator, *, is_async: bool) -> Any:
    """A client whose server sends the simulator's answers gzip-encoded."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        answer = sim.handle(
            request.method, request.url.path, dict(request.url.params), request.headers, request.content
        )
        headers = {"content-type": answer.content_type, "content-encoding": "gzip"}
        return httpx2.Response(answer.status, headers=headers, stream=_Gzipped(b"".join(answer.chunks)))

    transport = httpx2.MockTransport(handler)
    if is_async:
        return openai.AsyncOpenAI(
            api_key="x", base_url="http://sim/v1", http_client=httpx2.AsyncClient(transport=transport)
        )
    return openai.OpenAI(api_key="x", base_url="http://sim/v1", http_client=httpx2.Client(transport=transport))


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("how", ["iter_bytes", "parse", "aiter_bytes", "aparse"])
def test_gzip_encoded_raw_stream(how, transcript, store, journal_dir):
    """A content-encoded body: read decoded for capture; handed on as it came in keep mode, decoded and
    redacted in redact mode."""
    sim = _sim(CANARY)
    config = ReasoningConfig(store=store, journal=journal_dir, transcript=transcript)

    def call() -> Any:
        if how.startswith("a"):

            async def go() -> Any:
                client = _gzipped_client(sim, is_async=True)
                async with client.chat.completions.with_streaming_response.create(
                    stream=True, **_kwargs("chat")
                ) as raw:
                    return await _aread(raw, how)

            return asyncio.run(go())
        client = _gzipped_client(sim, is_async=False)
        with client.chat.completions.with_streaming_response.create(stream=True, **_kwargs("chat")) as raw:
            return _read(raw, how)

    bare = _seen(call())
    assert "CANARY" in bare
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        seen = _seen(call())
    if transcript == "keep":
        assert seen == bare
    else:
        assert "CANARY" not in seen
        assert seen.count("chat.completion.chunk") == bare.count("chat.completion.chunk")
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.digest"] == (_digest(CANARY),)


@pytest.mark.parametrize("transcript", ["keep", "redact"])
def test_raw_stream_whose_body_was_read_already(transcript, store, journal_dir):
    """A transport that hands over the body read (``httpx2.Response(content=...)``, as mocks do): the
    body is read whole at the call, captured, and in redact mode replaced."""
    sim = _sim(CANARY)

    def handler(request: httpx2.Request) -> httpx2.Response:
        answer = sim.handle(
            request.method, request.url.path, dict(request.url.params), request.headers, request.content
        )
        return httpx2.Response(answer.status, headers={"content-type": answer.content_type}, content=answer.body)

    def call() -> str:
        client = openai.OpenAI(
            api_key="x", base_url="http://sim/v1", http_client=httpx2.Client(transport=httpx2.MockTransport(handler))
        )
        with client.chat.completions.with_streaming_response.create(stream=True, **_kwargs("chat")) as raw:
            return "\n".join(raw.iter_lines())

    bare = call()
    config = ReasoningConfig(store=store, journal=journal_dir, transcript=transcript)
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        seen = call()
    assert (seen == bare) if transcript == "keep" else ("CANARY" not in seen and "[DONE]" in seen)
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.digest"] == (_digest(CANARY),)


@pytest.mark.parametrize("is_async", [False, True])
@pytest.mark.parametrize("api", APIS)
def test_raw_response_of_a_whole_response_redacted(api, is_async, store, journal_dir):
    """``with_raw_response.create()`` without ``stream``: parsed and captured at once, and in redact mode
    neither its body nor its parse holds the reasoning (core's dispatch, as for Anthropic)."""
    config = ReasoningConfig(store=store, journal=journal_dir, transcript="redact")
    sim = _sim(CANARY)

    async def aread() -> tuple[bytes, Any]:
        client = sim.async_openai_client()
        resource: Any = client.chat.completions if api == "chat" else client.responses
        raw = await resource.with_raw_response.create(**_kwargs(api))
        return raw.content, raw.parse()

    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        if is_async:
            body, parsed = asyncio.run(aread())
        else:
            client = sim.openai_client()
            resource: Any = client.chat.completions if api == "chat" else client.responses
            raw = resource.with_raw_response.create(**_kwargs(api))
            body, parsed = raw.content, raw.parse()
    assert json.loads(body)["model"]
    assert "CANARY" not in body.decode()
    assert "CANARY" not in parsed.model_dump_json()
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.digest"] == (_digest(CANARY),)
    assert find_leaks(["CANARY"], spans=telemetry.spans, directories=[journal_dir]) == []
