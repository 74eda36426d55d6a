"""The simulator's wire shapes match the recorded fixtures in tests/fixtures/wire, parsed by the real SDKs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types.beta import BetaMessage
from google.genai import types

from loom_otel.testing.simulator import Simulator

WIRE = Path(__file__).resolve().parents[1] / "fixtures" / "wire"
WEATHER = {
    "name": "get_weather",
    "input_schema": {"type": "object", "properties": {"location": {"type": "string"}, "date": {"type": "string"}}},
}
TIME = {"name": "get_local_time", "input_schema": {"type": "object", "properties": {"timezone": {"type": "string"}}}}
THINKING = {"type": "enabled", "budget_tokens": 1024}


def shape(value: Any) -> Any:
    """Keys and types, not values."""
    if isinstance(value, dict):
        return {k: "object" if k == "input" else shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def fixture_client(name: str) -> anthropic.Anthropic:
    content = (WIRE / name).read_bytes()
    kind = "text/event-stream" if name.endswith(".sse") else "application/json"
    transport = httpx2.MockTransport(lambda _: httpx2.Response(200, headers={"content-type": kind}, content=content))
    return anthropic.Anthropic(
        api_key="x", base_url="https://fixture.test", max_retries=0, http_client=httpx2.Client(transport=transport)
    )


@pytest.mark.parametrize(
    ("name", "sim", "tools"),
    [
        ("anthropic_thinking_tool_use.json", Simulator(), [WEATHER]),
        ("anthropic_redacted.json", Simulator(redacted=True), []),
        ("anthropic_interleaved.json", Simulator(interleaved=True), [TIME, WEATHER]),
    ],
)
def test_anthropic_messages_have_the_fixture_shape(name: str, sim: Simulator, tools: list[Any]) -> None:
    params: dict[str, Any] = {"model": "claude-sonnet-4-6", "max_tokens": 4096, "thinking": THINKING}
    params["messages"] = [{"role": "user", "content": "hi"}]
    if tools:
        params["tools"] = tools
    ours = sim.anthropic_client().messages.create(**params)
    theirs = fixture_client(name).messages.create(**params)
    assert [b.type for b in ours.content] == [b.type for b in theirs.content]
    assert ours.stop_reason == theirs.stop_reason
    recorded = json.loads((WIRE / name).read_text())
    raw = sim.requests[-1]
    assert raw.body["messages"] == params["messages"]
    ours_raw = json.loads(sim.handle("POST", "/v1/messages", {}, {}, json.dumps(params).encode()).body)
    assert shape(ours_raw["content"]) == shape(recorded["content"])
    fixture_keys = set(recorded) | set(recorded["usage"])
    assert fixture_keys <= set(ours_raw) | set(ours_raw["usage"])


def test_anthropic_stream_has_the_fixture_event_sequence() -> None:
    params: dict[str, Any] = {"model": "claude-sonnet-4-6", "max_tokens": 4096, "thinking": THINKING, "stream": True}
    params |= {"messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER]}
    sim = Simulator(stream_chunks=3)

    def sequence(client: anthropic.Anthropic) -> list[tuple[str, str]]:
        events = client.messages.create(**params)
        return [(e.type, getattr(getattr(e, "delta", None), "type", "")) for e in events]

    assert sequence(sim.anthropic_client()) == sequence(fixture_client("anthropic_stream_thinking.sse"))
    raw = sim.handle("POST", "/v1/messages", {}, {}, json.dumps(params).encode()).body.decode()
    ours = [line for line in raw.splitlines() if line.startswith("event:")]
    theirs = [
        line for line in (WIRE / "anthropic_stream_thinking.sse").read_text().splitlines() if line.startswith("event:")
    ]
    assert ours == theirs
    del params["stream"]
    with fixture_client("anthropic_stream_thinking.sse").messages.stream(**params) as stream:
        fixture_final = stream.get_final_message()
    with sim.anthropic_client().messages.stream(**params) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == [b.type for b in fixture_final.content]


def test_beta_input_transformations_shape() -> None:
    recorded = BetaMessage.model_validate_json((WIRE / "anthropic_beta_input_transformations.json").read_text())
    assert recorded.input_transformations
    sim = Simulator()
    client = sim.anthropic_client()
    history: list[Any] = [{"role": "user", "content": "hi"}]
    first = client.messages.create(
        model="claude-sonnet-4-6", max_tokens=4096, messages=history, tools=[WEATHER], thinking=THINKING
    )
    history += [
        first.to_param(),
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[-1].id, "content": "x"}]},
    ]
    history[0] = {"role": "user", "content": "edited"}
    ours = client.beta.messages.create(
        model="claude-sonnet-4-6",
        max_tokens=4096,
        messages=history,
        tools=[WEATHER],
        thinking={**THINKING, "block_binding": {"prefix_mismatch_behavior": "drop_block"}},
    )
    assert ours.input_transformations
    assert shape(ours.input_transformations[0].model_dump()) == shape(recorded.input_transformations[0].model_dump())


def _kinds(parts: list[dict[str, Any]]) -> list[str]:
    kinds = []
    for part in parts:
        kind = "thought" if part.get("thought") else "call" if "functionCall" in part else "text"
        kinds.append(kind + ("+sig" if "thoughtSignature" in part else ""))
    return kinds


def _frames(raw: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: ") :]) for line in raw.splitlines() if line.startswith("data: ")]


def _collapse(kinds: list[str]) -> list[str]:
    return [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]


def test_gemini_parallel_calls_have_the_fixture_shape() -> None:
    recorded = json.loads((WIRE / "gemini_thought_function_call.json").read_text())
    body = {
        "contents": [{"role": "user", "parts": [{"text": "Rain in Lyon and Grenoble?"}]}],
        "tools": [{"functionDeclarations": [{"name": "get_weather"}, {"name": "get_time"}]}],
        "generationConfig": {"thinkingConfig": {"include_thoughts": True}},
    }
    path = "/v1/models/gemini-3-flash-preview:generateContent"
    ours = json.loads(Simulator().handle("POST", path, {}, {}, json.dumps(body).encode()).body)
    assert _kinds(ours["candidates"][0]["content"]["parts"]) == _kinds(recorded["candidates"][0]["content"]["parts"])
    assert set(recorded) <= set(ours)
    assert set(recorded["usageMetadata"]) <= set(ours["usageMetadata"])
    parsed = types.GenerateContentResponse.model_validate(ours)
    assert parsed.candidates[0].content.parts[1].thought_signature


def test_gemini_stream_text_signature_has_the_fixture_shape() -> None:
    body = {
        "contents": [{"role": "user", "parts": [{"text": "Is 97 prime?"}]}],
        "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
    }
    path = "/v1beta/models/gemini-3-flash-preview:streamGenerateContent"
    reply = Simulator(stream_chunks=1).handle("POST", path, {"alt": "sse"}, {}, json.dumps(body).encode())
    raw = reply.body.decode()
    recorded_raw = (WIRE / "gemini_stream_text_signature.sse").read_text()
    assert "\r\n\r\n" in raw
    assert "event:" not in raw
    assert "[DONE]" not in raw
    ours, recorded = _frames(raw), _frames(recorded_raw)

    def kinds(frames: list[dict[str, Any]]) -> list[str]:
        return _collapse([k for f in frames for k in _kinds(f["candidates"][0]["content"]["parts"])])

    assert kinds(ours) == kinds(recorded) == ["thought", "text", "text+sig"]
    assert ours[-1]["candidates"][0]["content"]["parts"][-1]["text"] == ""
    assert ours[-1]["candidates"][0]["finishReason"] == recorded[-1]["candidates"][0]["finishReason"]
