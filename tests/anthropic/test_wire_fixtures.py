"""The recorded wire shapes in ``tests/fixtures/wire`` through the real SDK, in every call mode that
fits them: capture keeps vendor order and kinds, and the digests are those of the fixtures' texts."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator._clients import anthropic_http

REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 4096,
    "thinking": {"type": "enabled", "budget_tokens": 2048},
    "messages": [{"role": "user", "content": "Should I pack an umbrella for Lyon tomorrow?"}],
}


def _clients(body: bytes, content_type: str) -> tuple[anthropic.Anthropic, anthropic.AsyncAnthropic]:
    http = anthropic_http()  # httpx2, or httpx for anthropic < 1

    def handler(request: Any) -> Any:
        return http.Response(200, headers={"content-type": content_type}, content=body)

    options: dict[str, Any] = {"api_key": "x", "base_url": "https://api.anthropic.test", "max_retries": 0}
    return (
        anthropic.Anthropic(http_client=http.Client(transport=http.MockTransport(handler)), **options),
        anthropic.AsyncAnthropic(http_client=http.AsyncClient(transport=http.MockTransport(handler)), **options),
    )


def _json_modes(sync: anthropic.Anthropic, async_: anthropic.AsyncAnthropic) -> dict[str, Any]:
    return {
        "sync": lambda: sync.messages.create(**REQUEST),
        "async": lambda: asyncio.run(async_.messages.create(**REQUEST)),
        "parse": lambda: sync.messages.parse(**REQUEST),
        "beta": lambda: sync.beta.messages.create(**REQUEST),
    }


def _sse_modes(sync: anthropic.Anthropic, async_: anthropic.AsyncAnthropic) -> dict[str, Any]:
    def stream() -> None:
        with sync.messages.create(stream=True, **REQUEST) as events:
            list(events)

    async def async_stream() -> None:
        events = await async_.messages.create(stream=True, **REQUEST)
        _ = [event async for event in events]

    def helper() -> None:
        with sync.messages.stream(**REQUEST) as events:
            events.get_final_message()

    async def async_helper() -> None:
        async with async_.messages.stream(**REQUEST) as events:
            await events.get_final_message()

    return {
        "stream": stream,
        "async_stream": lambda: asyncio.run(async_stream()),
        "messages.stream": helper,
        "async_messages.stream": lambda: asyncio.run(async_helper()),
    }


def _expected(blocks: list[dict[str, Any]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    kinds, digests = [], []
    for block in blocks:
        if block["type"] == "thinking":
            kinds.append("summary")  # claude-sonnet-4-6 summarises its thinking
            digests.append(hashlib.sha256(block["thinking"].encode()).hexdigest())
        elif block["type"] == "redacted_thinking":
            kinds.append("redacted")
            digests.append("")
    return tuple(kinds), tuple(digests)


@pytest.mark.parametrize(
    "fixture", ["anthropic_thinking_tool_use.json", "anthropic_redacted.json", "anthropic_interleaved.json"]
)
@pytest.mark.parametrize("mode", ["sync", "async", "parse", "beta"])
def test_json_fixtures(fixture, mode, wire: Path, config, store, journal_dir):
    body = (wire / fixture).read_bytes()
    blocks = json.loads(body)["content"]
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        _json_modes(*_clients(body, "application/json"))[mode]()
    (event,) = reasoning_events(telemetry.spans)
    kinds, digests = _expected(blocks)
    assert event["loom.reasoning.part.kind"] == kinds
    assert event["loom.reasoning.part.digest"] == digests
    execution_id = event["loom.execution.id"]
    texts = [b["thinking"].encode() for b in blocks if b["type"] == "thinking"]
    refs = [r for r in event["loom.reasoning.part.ref"] if r]
    assert [store.get(r, tenant=None, execution_id=execution_id) for r in refs] == texts
    secrets = [s for b in blocks for s in (b.get("thinking"), b.get("signature"), b.get("data")) if s]
    assert find_leaks(secrets, spans=telemetry.spans, directories=[journal_dir]) == []


@pytest.mark.parametrize("mode", ["stream", "async_stream", "messages.stream", "async_messages.stream"])
def test_sse_fixture(mode, wire: Path, config, store, journal_dir):
    body = (wire / "anthropic_stream_thinking.sse").read_bytes()
    thinking = "".join(
        json.loads(line[6:])["delta"]["thinking"]
        for line in body.decode().splitlines()
        if line.startswith("data: ") and '"thinking_delta"' in line
    )
    signature = next(
        json.loads(line[6:])["delta"]["signature"] for line in body.decode().splitlines() if '"signature_delta"' in line
    )
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        _sse_modes(*_clients(body, "text/event-stream"))[mode]()
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.kind"] == ("summary",)
    assert event["loom.reasoning.part.digest"] == (hashlib.sha256(thinking.encode()).hexdigest(),)
    assert event["loom.reasoning.part.size"] == (len(thinking.encode()),)
    (ref,) = event["loom.reasoning.part.ref"]
    assert store.get(ref, tenant=None, execution_id=event["loom.execution.id"]) == thinking.encode()
    (span,) = [s for s in telemetry.spans if s.name.startswith("chat")]
    assert span.attributes["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert find_leaks([thinking, signature], spans=telemetry.spans, directories=[journal_dir]) == []
