"""Fault injection: vendor-shaped HTTP errors and streams cut mid-way, in-process and over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google.genai import errors, types

MESSAGE = {"model": "claude-sonnet-4-6", "max_tokens": 2048, "messages": [{"role": "user", "content": "hi"}]}
THINKING = {"type": "enabled", "budget_tokens": 1024}


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, anthropic.BadRequestError),
        (429, anthropic.RateLimitError),
        (500, anthropic.InternalServerError),
        (529, anthropic.APIStatusError),
    ],
)
def test_anthropic_fail_next(target: Any, status: int, error: type[Exception]) -> None:
    target.sim.fail_next(status, n=2)
    client = target.anthropic_client()
    for _ in range(2):
        with pytest.raises(error) as raised:
            client.messages.create(**MESSAGE)
        assert raised.value.status_code == status
        body = raised.value.body
        assert body["type"] == "error"
        assert body["error"]["type"] in {"invalid_request_error", "rate_limit_error", "api_error", "overloaded_error"}
    assert client.messages.create(**MESSAGE).content
    assert len(target.sim.requests) == 3


def test_gemini_and_openai_fail_next(target: Any) -> None:
    target.sim.fail_next(429)
    client = target.genai_client()
    with pytest.raises(errors.ClientError) as raised:
        client.models.generate_content(model="gemini-3-flash-preview", contents="hi")
    assert raised.value.code == 429
    assert raised.value.status == "RESOURCE_EXHAUSTED"
    target.sim.fail_next(503)
    with pytest.raises(errors.ServerError):
        client.models.generate_content(model="gemini-3-flash-preview", contents="hi")
    target.sim.fail_next(429)
    with pytest.raises(openai.RateLimitError):
        target.openai_client().chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    target.sim.fail_next(500)
    with pytest.raises(openai.InternalServerError):
        target.openai_client().responses.create(model="m", input="hi")
    assert target.openai_client().responses.create(model="m", input="hi").output_text


def test_anthropic_broken_stream_raises_overloaded(target: Any) -> None:
    target.sim.break_stream_after(4)
    client = target.anthropic_client()
    seen: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError) as raised,
        client.messages.stream(**MESSAGE, thinking=THINKING) as stream,
    ):
        seen.extend(event.type for event in stream)
    assert raised.value.body["error"]["type"] == "overloaded_error"
    assert "message_stop" not in seen
    with client.messages.stream(**MESSAGE, thinking=THINKING) as stream:  # only the next stream breaks
        assert stream.get_final_message().stop_reason == "end_turn"


async def test_anthropic_broken_stream_async(sim: Any) -> None:
    sim.break_stream_after(2)
    async with sim.async_anthropic_client() as client:
        with pytest.raises(anthropic.APIStatusError):
            async for _ in await client.messages.create(**MESSAGE, stream=True):
                pass


def test_gemini_broken_stream_raises(target: Any) -> None:
    target.sim.break_stream_after(2)
    client = target.genai_client()
    config = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(include_thoughts=True))
    received = []
    with pytest.raises(httpx2.TransportError):
        for chunk in client.models.generate_content_stream(
            model="gemini-3-flash-preview", contents="hi", config=config
        ):
            received.append(chunk)
    assert len(received) == 2


def test_openai_broken_streams_raise_connection_errors(target: Any) -> None:
    client = target.openai_client()
    target.sim.break_stream_after(3)
    with pytest.raises(openai.APIConnectionError):
        list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True))
    target.sim.break_stream_after(3)
    with pytest.raises(openai.APIConnectionError):
        list(client.responses.create(model="m", input="hi", stream=True))

    async def run() -> None:
        target.sim.break_stream_after(1)
        stream = await target.async_openai_client().responses.create(model="m", input="hi", stream=True)
        async for _ in stream:
            pass

    with pytest.raises(openai.APIConnectionError):
        asyncio.run(run())


def test_reset_clears_requests_and_faults(sim: Any) -> None:
    sim.fail_next(500, n=3)
    sim.break_stream_after(1)
    client = sim.anthropic_client()
    with pytest.raises(anthropic.InternalServerError):
        client.messages.create(**MESSAGE)
    sim.reset()
    assert sim.requests == []
    assert client.messages.create(**MESSAGE).content
    assert list(client.messages.create(**MESSAGE, stream=True))[-1].type == "message_stop"
