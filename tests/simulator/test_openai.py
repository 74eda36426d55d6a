"""OpenAI-compatible Chat Completions and the Responses API against the real openai SDK."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest

from loom_otel.testing.simulator import Simulator

CANARY = "CANARY-reasoning-7f3a"
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
RESPONSE_TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
MODES = ["sync", "async", "stream", "async_stream"]


def chat(target: Any, mode: str, field: str = "reasoning_content", **params: Any) -> dict[str, Any]:
    """The assistant message as a dict (streamed deltas accumulated)."""
    params = {"model": "deepseek-reasoner", **params}
    if mode == "sync":
        return target.openai_client().chat.completions.create(**params).choices[0].message.to_dict()
    if mode == "async":

        async def once() -> Any:
            return await target.async_openai_client().chat.completions.create(**params)

        return asyncio.run(once()).choices[0].message.to_dict()
    if mode == "stream":
        chunks = list(target.openai_client().chat.completions.create(stream=True, **params))
    else:

        async def collect() -> list[Any]:
            stream = await target.async_openai_client().chat.completions.create(stream=True, **params)
            return [c async for c in stream]

        chunks = asyncio.run(collect())
    message: dict[str, Any] = {"role": "assistant", "content": None, field: ""}
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta.to_dict()
            message[field] += delta.get(field) or ""
            if delta.get("content"):
                message["content"] = (message["content"] or "") + delta["content"]
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call["index"], {"type": "function", "function": {"arguments": ""}})
                slot.update({k: v for k, v in call.items() if k in ("id", "type")})
                slot["function"]["name"] = call.get("function", {}).get("name") or slot["function"].get("name")
                slot["function"]["arguments"] += call.get("function", {}).get("arguments") or ""
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


@pytest.mark.parametrize("mode", MODES)
def test_chat_tool_loop_with_reasoning_content(target: Any, mode: str) -> None:
    history: list[Any] = [{"role": "user", "content": "Weather in Lyon?"}]
    first = chat(target, mode, messages=history, tools=CHAT_TOOLS)
    assert first["reasoning_content"] == CANARY
    assert first["tool_calls"][0]["function"]["name"] == "get_weather"
    assert json.loads(first["tool_calls"][0]["function"]["arguments"]) == {"city": "sim-city"}
    call_id = first["tool_calls"][0]["id"]
    history += [first, {"role": "tool", "tool_call_id": call_id, "content": "sunny"}]
    second = chat(target, mode, messages=history, tools=CHAT_TOOLS)
    assert second["content"] == "Based on the tool results, here is the answer to: Weather in Lyon?"
    assert second["reasoning_content"] == CANARY
    assert target.sim.requests[-1].path == "/v1/chat/completions"


def test_chat_reasoning_field_and_usage_chunk(make_target: Any) -> None:
    target = make_target(Simulator(reasoning_field="reasoning", stream_chunks=3))
    message = chat(target, "stream", field="reasoning", messages=[{"role": "user", "content": "hi"}])
    assert message["reasoning"].startswith("The user asks: hi.")
    assert "reasoning_content" not in message or not message["reasoning_content"]
    chunks = list(
        target.openai_client().chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True, stream_options={"include_usage": True}
        )
    )
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.to_dict().get("reasoning")) == 3
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens_details.reasoning_tokens > 0


def test_deepseek_rule_reasoning_content_must_come_back(sim: Simulator) -> None:
    client = sim.openai_client()
    history: list[Any] = [{"role": "user", "content": "Weather?"}]
    first = client.chat.completions.create(model="deepseek-reasoner", messages=history, tools=CHAT_TOOLS)
    message = first.choices[0].message.to_dict()
    del message["reasoning_content"]
    history += [message, {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "sunny"}]
    with pytest.raises(openai.BadRequestError, match="Missing `reasoning_content` field"):
        client.chat.completions.create(model="deepseek-reasoner", messages=history, tools=CHAT_TOOLS)


def test_chat_structured_output(sim: Simulator) -> None:
    from pydantic import BaseModel

    class Answer(BaseModel):
        city: str
        days: int

    parsed = sim.openai_client().chat.completions.parse(
        model="m", messages=[{"role": "user", "content": "x"}], response_format=Answer
    )
    assert parsed.choices[0].message.parsed == Answer(city="sim-city", days=1)


def respond(target: Any, mode: str, **params: Any) -> Any:
    params = {"model": "o4-mini", "reasoning": {"effort": "high", "summary": "auto"}, **params}
    if mode == "sync":
        return target.openai_client().responses.create(**params)
    if mode == "stream":
        with target.openai_client().responses.stream(**params) as stream:
            return stream.get_final_response()

    async def run() -> Any:
        client = target.async_openai_client()
        if mode == "async":
            return await client.responses.create(**params)
        events = [e async for e in await client.responses.create(stream=True, **params)]
        assert events[-1].type == "response.completed"
        return events[-1].response

    return asyncio.run(run())


@pytest.mark.parametrize("mode", MODES)
def test_responses_tool_loop(target: Any, mode: str) -> None:
    first = respond(target, mode, input="Weather in Lyon?", tools=RESPONSE_TOOLS)
    reasoning, call = first.output
    assert reasoning.type == "reasoning"
    assert reasoning.summary[0].text == CANARY
    assert reasoning.encrypted_content
    assert call.type == "function_call"
    assert call.name == "get_weather"
    history = [{"role": "user", "content": "Weather in Lyon?"}, *[o.to_dict() for o in first.output]]
    history.append({"type": "function_call_output", "call_id": call.call_id, "output": "sunny"})
    second = respond(target, mode, input=history, tools=RESPONSE_TOOLS)
    assert second.output_text == "Based on the tool results, here is the answer to: Weather in Lyon?"
    assert second.input_transformations is None
    assert second.usage.output_tokens_details.reasoning_tokens > 0


@pytest.mark.parametrize(("change", "reason"), [("prefix", "prefix_mismatch"), ("model", "model_mismatch")])
def test_responses_input_transformations(sim: Simulator, change: str, reason: str) -> None:
    client = sim.openai_client()
    first = client.responses.create(model="o4-mini", input="Weather?", tools=RESPONSE_TOOLS)
    assert first.output[0].summary == []  # no summary unless requested
    history: list[Any] = [{"role": "user", "content": "Weather in Paris?" if change == "prefix" else "Weather?"}]
    history += [o.to_dict() for o in first.output]
    history.append({"type": "function_call_output", "call_id": first.output[1].call_id, "output": "x"})
    model = "o5" if change == "model" else "o4-mini"
    second = client.responses.create(model=model, input=history, tools=RESPONSE_TOOLS)
    assert second.input_transformations is not None
    assert [(t.id, t.action, t.type, t.reason) for t in second.input_transformations] == [
        (first.output[0].id, "removed", "reasoning", reason)
    ]


def test_responses_stream_event_types(sim: Simulator) -> None:
    with sim.openai_client().responses.stream(model="o4-mini", input="hi", reasoning={"summary": "auto"}) as stream:
        kinds = [event.type for event in stream]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds.count("response.reasoning_summary_text.delta") == 5
    assert "response.output_text.delta" in kinds
    assert kinds[-1] == "response.completed"
