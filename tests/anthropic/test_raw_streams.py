"""Raw Messages responses (``with_raw_response``, ``with_streaming_response``), streamed and whole, sync
and async, first-party and beta: captured like any other response, and in redact mode no readable thinking
reaches the application, however it reads the body."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import anthropic
import pytest
from opentelemetry.trace import StatusCode

from loom_otel.core import ReasoningConfig
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import request

APIS = ("messages", "beta")
CANARY = "CANARY-51c0-" * 8
"""Every streamed piece of it holds ``CANARY`` (4 pieces of 96 characters)."""
READS = ("iter_lines", "iter_bytes", "iter_text", "read", "text", "parse")
ASYNC_READS = ("aiter_lines", "aiter_bytes", "aread", "aparse")


def _kwargs(api: str) -> dict[str, Any]:
    return request()


def _resource(client: Any, api: str) -> Any:
    return client.messages if api == "messages" else client.beta.messages


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
            resource = _resource(sim.async_anthropic_client(), api)
            async with resource.with_streaming_response.create(stream=True, **_kwargs(api)) as raw:
                return await _aread(raw, how)

        return asyncio.run(go())
    resource = _resource(sim.anthropic_client(), api)
    with resource.with_streaming_response.create(stream=True, **_kwargs(api)) as raw:
        return _read(raw, how)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _sim(text: str) -> Simulator:
    return Simulator(reasoning_text=text, stream_chunks=4)


@pytest.mark.parametrize("how", READS + ASYNC_READS)
@pytest.mark.parametrize("api", APIS)
def test_streamed_raw_response_captured_and_bare_in_keep_mode(api, how, config, store):
    sim = _sim(CANARY)
    bare = _seen(_streamed(sim, api, how))
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        seen = _seen(_streamed(sim, api, how))
    assert seen == bare
    assert "CANARY" in seen
    (span,) = telemetry.spans
    assert "loom.stream.outcome" not in span.attributes
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.digest"] == (_digest(CANARY),)
    blob = store.get(event["loom.reasoning.part.ref"][0], tenant=None, execution_id=event["loom.execution.id"])
    assert blob == CANARY.encode()


@pytest.mark.parametrize("how", READS + ASYNC_READS)
@pytest.mark.parametrize("api", APIS)
def test_streamed_raw_response_redacted(api, how, store, journal_dir):
    sim = _sim(CANARY)
    config = ReasoningConfig(store=store, journal=journal_dir, transcript="redact")
    bare = _streamed(sim, api, how)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        seen = _streamed(sim, api, how)
    assert "CANARY" not in _seen(seen)
    if how in ("parse", "aparse"):  # the same chunks, their reasoning blank
        assert [c.type for c in seen] == [c.type for c in bare]
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.digest"] == (_digest(CANARY),)
    assert find_leaks(["CANARY"], spans=telemetry.spans, directories=[journal_dir]) == []


@pytest.mark.parametrize("api", APIS)
def test_streamed_raw_response_closed_early(api, config, store):
    sim = _sim(CANARY)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        resource = _resource(sim.anthropic_client(), api)
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
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        resource = _resource(sim.anthropic_client(), api)
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
    sim.break_stream_after(3)  # an ``error`` event: the parsed stream raises it, the bytes carry it
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        if how.endswith("parse"):
            with pytest.raises(anthropic.APIStatusError) as info:
                _streamed(sim, api, how)
            assert "CANARY" not in str(info.value)
        else:
            assert "overloaded_error" in _seen(_streamed(sim, api, how))
    (span,) = telemetry.spans
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "APIStatusError"  # as the parsed stream raises it
    assert reasoning_events(telemetry.spans) == []


@pytest.mark.parametrize("api", APIS)
def test_raw_stream_of_with_raw_response_redacted(api, store, journal_dir):
    """``with_raw_response.create(stream=True)``: the body is unread too; its parsed stream is redacted."""
    config = ReasoningConfig(store=store, journal=journal_dir, transcript="redact")
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        resource = _resource(_sim(CANARY).anthropic_client(), api)
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
        resource = _resource(sim.async_anthropic_client(), api)
        async with resource.with_streaming_response.create(**_kwargs(api)) as raw:
            return await raw.read(), await raw.parse()

    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        if is_async:
            body, parsed = asyncio.run(aread())
        else:
            resource = _resource(sim.anthropic_client(), api)
            with resource.with_streaming_response.create(**_kwargs(api)) as raw:
                body, parsed = raw.read(), raw.parse()
    assert json.loads(body)["content"][0]["type"] == "thinking"
    assert "CANARY" not in body.decode()
    assert "CANARY" not in parsed.model_dump_json()
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.digest"] == (_digest(CANARY),)
    assert find_leaks(["CANARY"], spans=telemetry.spans, directories=[journal_dir]) == []
