"""Redact mode: nothing the application can reach through the SDK carries readable reasoning (DESIGN
"transcript=redact"), including what loom-otel put back into a request: an SDK error's message, body,
request and response (a 429/5xx, a 400 that quotes the request), and a raw response's body."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anthropic
import pytest

from loom_otel.core import LoomOtelWarning, MemoryReasoningStore, ReasoningConfig
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from loom_otel.testing.simulator._clients import anthropic_http
from tests.anthropic.modes import MODES
from tests.support.anthropic_sdk import assistant_turn
from tests.support.tools import WEATHER

HTTP = anthropic_http()  # httpx2, or httpx for anthropic < 1
CANARY = "CANARY-withheld-77e1"
KW = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": {"type": "adaptive"}, "tools": [WEATHER]}


def _first_round(sim: Simulator, send: Any) -> list[Any]:
    history: list[Any] = [{"role": "user", "content": "Plan a rainy-day walk in Lyon."}]
    first = send(sim, {**KW, "messages": history})
    call = next(b for b in first.content if b.type == "tool_use")
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "rain"}]}
    return [*history, assistant_turn(first), result]


def _reachable(exc: anthropic.APIStatusError) -> list[str]:
    """Everything the application can read off the exception."""
    return [
        str(exc),
        repr(exc.args),
        json.dumps(exc.body, default=str),
        exc.request.content.decode(errors="replace"),
        b"".join(exc.request.stream).decode(errors="replace"),
        exc.response.text,
    ]


@pytest.mark.parametrize("status", [429, 500, 529])
@pytest.mark.parametrize("mode", ["sync", "async", "stream", "messages.stream"])
def test_an_sdk_error_after_text_was_put_back_carries_none(mode: str, status: int, tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=2)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    with instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        history = _first_round(sim, MODES[mode])
        sim.fail_next(status)
        with pytest.raises(anthropic.APIStatusError) as info:
            MODES[mode](sim, {**KW, "messages": history})
    assert CANARY in json.dumps(sim.requests[-1].body)  # the text was put back: the vendor got it
    assert find_leaks([CANARY], texts=_reachable(info.value), spans=telemetry.spans, directories=[tmp_path]) == []


def test_a_400_that_quotes_the_request_carries_none(tmp_path: Path) -> None:
    """A vendor error message quoting the request body (some gateways do) loses the text put back."""
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=2)
    inner = sim.transport(HTTP)

    def quoting(request: Any) -> Any:
        if len(sim.requests) < 1:
            return inner.handle_request(request)
        quoted = request.content.decode()
        error = {"type": "error", "error": {"type": "invalid_request_error", "message": f"bad request: {quoted}"}}
        return HTTP.Response(400, json=error, request=request)

    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    client = sim.anthropic_client(http_client=HTTP.Client(transport=HTTP.MockTransport(quoting)))
    with instrumented(AnthropicInstrumentor(), config=settings):
        history = _first_round(sim, lambda _sim, kw: client.messages.create(**kw))
        with pytest.raises(anthropic.BadRequestError) as info:
            client.messages.create(**{**KW, "messages": history})
    reachable = _reachable(info.value)
    assert "[reasoning removed by loom-otel]" in reachable[0]  # the quote is there, without the text
    assert find_leaks([CANARY], texts=reachable) == []


def test_a_raw_response_body_carries_none(tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}")
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    with instrumented(AnthropicInstrumentor(), config=settings):
        raw = sim.anthropic_client().messages.with_raw_response.create(
            **{**KW, "messages": [{"role": "user", "content": "Hi"}]}
        )
    message = raw.parse()
    assert message.content[0].type == "thinking" and message.content[0].signature
    assert (
        find_leaks(
            [CANARY], texts=[raw.http_response.text, raw.http_response.content.decode(), message.model_dump_json()]
        )
        == []
    )


def test_sdk_debug_logs_in_redact_mode_warn_once(tmp_path: Path) -> None:
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    logging.getLogger("anthropic").setLevel(logging.DEBUG)
    try:
        with (
            pytest.warns(LoomOtelWarning, match="anthropic logger"),
            instrumented(AnthropicInstrumentor(), config=settings),
        ):
            pass
    finally:
        logging.getLogger("anthropic").setLevel(logging.NOTSET)
