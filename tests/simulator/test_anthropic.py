"""The Anthropic Messages API against the real SDK: script, streaming, signatures and strict rules."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import anthropic
import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message

from loom_otel.testing.simulator import Simulator

Target = Any  # the conftest fixture class

MODEL = "claude-sonnet-4-6"
CANARY = "CANARY-reasoning-7f3a"
WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {
        "type": "object",
        "properties": {"location": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["location"],
    },
}
TIME = {
    "name": "get_time",
    "description": "Local time.",
    "input_schema": {"type": "object", "properties": {"timezone": {"type": "string"}}},
}
THINKING = {"type": "enabled", "budget_tokens": 1024}
MODES = ["sync", "async", "stream", "async_stream", "helper", "async_helper"]
BINDING_BETA = {"anthropic-beta": "thinking-binding-controls-2026-08-01"}


def call(target: Target, mode: str, **params: Any) -> Message:
    """One request in the given call mode; the final ``Message`` (rebuilt from the stream if streamed)."""
    params = {"model": MODEL, "max_tokens": 4096, **params}
    if mode.startswith("async"):
        return asyncio.run(_acall(target, mode, params))
    client = target.anthropic_client()
    if mode == "sync":
        return client.messages.create(**params)
    if mode == "stream":
        snapshot, bufs = None, {}
        with client.messages.create(stream=True, **params) as stream:
            for event in stream:
                snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=bufs)
        assert snapshot is not None
        return snapshot
    with client.messages.stream(**params) as helper:
        return helper.get_final_message()


async def _acall(target: Target, mode: str, params: dict[str, Any]) -> Message:
    async with target.async_anthropic_client() as client:
        if mode == "async":
            return await client.messages.create(**params)
        if mode == "async_stream":
            snapshot, bufs = None, {}
            async for event in await client.messages.create(stream=True, **params):
                snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=bufs)
            assert snapshot is not None
            return snapshot
        async with client.messages.stream(**params) as helper:
            return await helper.get_final_message()


def types_of(message: Message) -> list[str]:
    return [block.type for block in message.content]


def as_dict(message: Message) -> dict[str, Any]:
    """The assistant turn as plain dicts (editable), as an application might store it."""
    return {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}


def tool_results(message: Message) -> dict[str, Any]:
    results = [
        {"type": "tool_result", "tool_use_id": block.id, "content": "sunny"}
        for block in message.content
        if block.type == "tool_use"
    ]
    return {"role": "user", "content": results}


@pytest.mark.parametrize("mode", MODES)
def test_tool_loop_round_trip_is_accepted(target: Target, mode: str) -> None:
    history: list[Any] = [{"role": "user", "content": "Umbrella in Lyon tomorrow?"}]
    first = call(target, mode, messages=history, tools=[WEATHER], thinking=THINKING)
    assert types_of(first) == ["thinking", "text", "tool_use"]
    assert first.stop_reason == "tool_use"
    thinking = first.content[0]
    assert thinking.type == "thinking"
    assert thinking.thinking == CANARY
    assert thinking.signature
    tool_use = first.content[2]
    assert tool_use.type == "tool_use"
    assert tool_use.name == "get_weather"
    assert tool_use.input == {"location": "sim-location", "unit": "c"}
    assert first.usage.output_tokens_details is not None
    assert first.usage.output_tokens_details.thinking_tokens > 0

    history += [first.to_param(), tool_results(first)]
    second = call(target, mode, messages=history, tools=[WEATHER], thinking=THINKING)
    assert types_of(second) == ["thinking", "text"]
    assert second.stop_reason == "end_turn"

    history += [second.to_param(), {"role": "user", "content": "And the day after?"}]
    third = call(target, mode, messages=history, tools=[WEATHER], thinking=THINKING)
    assert third.stop_reason == "tool_use"
    sent = target.sim.requests[-1]
    assert sent.path == "/v1/messages"
    assert sent.body["messages"][1]["content"][0]["signature"] == thinking.signature


def test_content_objects_sent_back_unchanged_are_accepted(sim: Simulator) -> None:
    client = sim.anthropic_client()
    history: list[Any] = [{"role": "user", "content": "hi"}]
    first = client.messages.create(model=MODEL, max_tokens=4096, messages=history, tools=[WEATHER], thinking=THINKING)
    history += [{"role": "assistant", "content": first.content}, tool_results(first)]
    second = client.messages.create(
        model=MODEL,
        max_tokens=4096,
        messages=history,
        tools=[{**WEATHER, "cache_control": {"type": "ephemeral"}}],  # ignored by binding
        thinking=THINKING,
    )
    assert second.stop_reason == "end_turn"


def test_system_string_and_block_list_bind_alike(sim: Simulator) -> None:
    client = sim.anthropic_client()
    history: list[Any] = [{"role": "user", "content": "hi"}]
    first = client.messages.create(
        model=MODEL, max_tokens=4096, system="Be brief.", messages=history, tools=[WEATHER], thinking=THINKING
    )
    history += [first.to_param(), tool_results(first)]
    system = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    second = client.messages.create(
        model=MODEL, max_tokens=4096, system=system, messages=history, tools=[WEATHER], thinking=THINKING
    )
    assert second.stop_reason == "end_turn"
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):
        client.messages.create(
            model=MODEL, max_tokens=4096, system="Be verbose.", messages=history, tools=[WEATHER], thinking=THINKING
        )


def _two_turns(client: anthropic.Anthropic) -> list[Any]:
    history: list[Any] = [{"role": "user", "content": "What's the weather?"}]
    first = client.messages.create(model=MODEL, max_tokens=4096, messages=history, tools=[WEATHER], thinking=THINKING)
    history += [as_dict(first), tool_results(first)]
    second = client.messages.create(model=MODEL, max_tokens=4096, messages=history, tools=[WEATHER], thinking=THINKING)
    return [*history, as_dict(second), {"role": "user", "content": "Thanks. And tomorrow?"}]


@pytest.mark.parametrize("mode", ["sync", "async", "helper"])
def test_editing_an_earlier_user_message_is_rejected(target: Target, mode: str) -> None:
    history = _two_turns(target.anthropic_client())
    history[0] = {"role": "user", "content": "What's the weather in Paris?"}
    with pytest.raises(anthropic.BadRequestError) as raised:
        call(target, mode, messages=history, tools=[WEATHER], thinking=THINKING)
    assert raised.value.status_code == 400
    assert "messages.1.content.0: Invalid `signature` in `thinking` block" in str(raised.value)
    body = raised.value.body
    assert isinstance(body, dict)
    assert body["error"]["type"] == "invalid_request_error"


def test_editing_a_later_text_block_invalidates_only_later_blocks(sim: Simulator) -> None:
    client = sim.anthropic_client()
    history = _two_turns(client)
    history[3]["content"][1]["text"] = "edited"  # text after the second turn's thinking block
    client.messages.create(model=MODEL, max_tokens=4096, messages=history, tools=[WEATHER], thinking=THINKING)
    history[1]["content"][1]["text"] = "edited"  # text after the first thinking block: binds the later one
    with pytest.raises(anthropic.BadRequestError, match=r"messages\.3\.content\.0: Invalid"):
        client.messages.create(model=MODEL, max_tokens=4096, messages=history, tools=[WEATHER], thinking=THINKING)


def test_tampered_thinking_text_is_rejected(sim: Simulator) -> None:
    client = sim.anthropic_client()
    history = _two_turns(client)
    history[1]["content"][0]["thinking"] = "something else"
    with pytest.raises(anthropic.BadRequestError, match=r"messages\.1\.content\.0: Invalid `signature`"):
        client.messages.create(model=MODEL, max_tokens=4096, messages=history, tools=[WEATHER], thinking=THINKING)


@pytest.mark.parametrize("mode", ["sync", "async_helper"])
def test_stripping_thinking_from_the_tool_round_is_rejected(target: Target, mode: str) -> None:
    history: list[Any] = [{"role": "user", "content": "hi"}]
    first = call(target, mode, messages=history, tools=[WEATHER], thinking=THINKING)
    assistant = as_dict(first)
    assistant["content"] = [b for b in assistant["content"] if b["type"] != "thinking"]
    history += [assistant, tool_results(first)]
    with pytest.raises(anthropic.BadRequestError) as raised:
        call(target, mode, messages=history, tools=[WEATHER], thinking=THINKING)
    message = str(raised.value)
    assert "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`" in message
    assert "a final `assistant` message must start with a thinking block" in message


def test_switching_model_is_rejected(sim: Simulator) -> None:
    client = sim.anthropic_client()
    history = _two_turns(client)
    with pytest.raises(anthropic.BadRequestError, match="different model"):
        client.messages.create(
            model="claude-opus-5-5", max_tokens=4096, messages=history, tools=[WEATHER], thinking=THINKING
        )


def test_drop_block_drops_the_invalid_block_and_every_later_one(sim: Simulator) -> None:
    client = sim.anthropic_client()
    history = _two_turns(client)
    history[0] = {"role": "user", "content": "edited"}
    thinking = {**THINKING, "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    message = client.beta.messages.create(
        model=MODEL,
        max_tokens=4096,
        messages=history,
        tools=[WEATHER],
        thinking=thinking,
        extra_headers=BINDING_BETA,
    )
    assert [(t.type, t.path, t.reason) for t in message.input_transformations or []] == [
        ("thinking_dropped", "messages.1.content.0", "prefix_binding_mismatch"),
        ("thinking_dropped", "messages.3.content.0", "prefix_binding_mismatch"),
    ]
    assert sim.requests[-1].header("anthropic-beta") == BINDING_BETA["anthropic-beta"]


def test_drop_block_reports_model_binding_mismatch(sim: Simulator) -> None:
    client = sim.anthropic_client()
    history = _two_turns(client)
    thinking = {**THINKING, "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    with client.beta.messages.stream(
        model="claude-opus-5-5",
        max_tokens=4096,
        messages=history,
        tools=[WEATHER],
        thinking=thinking,
        extra_headers=BINDING_BETA,
    ) as stream:
        message = stream.get_final_message()
    assert {t.reason for t in message.input_transformations or []} == {"model_binding_mismatch"}
    unchanged = client.beta.messages.create(
        model=MODEL,
        max_tokens=4096,
        messages=history,
        tools=[WEATHER],
        thinking=thinking,
        extra_headers=BINDING_BETA,
    )
    assert unchanged.input_transformations == []


def test_thinking_block_in_a_user_message_is_rejected(sim: Simulator) -> None:
    client = sim.anthropic_client()
    block = {"type": "thinking", "thinking": "x", "signature": "abc"}
    with pytest.raises(anthropic.BadRequestError, match=r"messages\.0\.content\.0"):
        client.messages.create(model=MODEL, max_tokens=4096, messages=[{"role": "user", "content": [block]}])


def test_non_strict_and_thread_continue_accept_anything(sim: Simulator) -> None:
    client = sim.anthropic_client()
    history = _two_turns(client)
    history[0] = {"role": "user", "content": "edited"}
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model=MODEL, max_tokens=4096, messages=history, thinking=THINKING)
    client.beta.messages.create(
        model=MODEL,
        max_tokens=4096,
        messages=history,
        thinking=THINKING,
        extra_body={"thread": {"type": "continue", "previous_message_id": "msg_x"}},
        extra_headers={"anthropic-beta": "message-threads-2026-08-12"},
    )
    sim.strict = False
    assert client.messages.create(model=MODEL, max_tokens=4096, messages=history, thinking=THINKING).content


def test_display_omitted_returns_empty_thinking_with_a_signature(sim: Simulator) -> None:
    client = sim.anthropic_client()
    thinking = {**THINKING, "display": "omitted"}
    history: list[Any] = [{"role": "user", "content": "hi"}]
    first = client.messages.create(model=MODEL, max_tokens=4096, messages=history, tools=[WEATHER], thinking=thinking)
    block = first.content[0]
    assert block.type == "thinking"
    assert block.thinking == ""
    assert block.signature
    assert first.usage.output_tokens_details is not None
    assert first.usage.output_tokens_details.thinking_tokens > 0
    history += [as_dict(first), tool_results(first)]
    client.messages.create(model=MODEL, max_tokens=4096, messages=history, tools=[WEATHER], thinking=thinking)
    history[1]["content"][0]["thinking"] = CANARY  # rehydrating an omitted block is a modification
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model=MODEL, max_tokens=4096, messages=history, tools=[WEATHER], thinking=thinking)


@pytest.mark.parametrize("mode", ["sync", "stream", "helper"])
def test_redacted_thinking(make_target: Any, mode: str) -> None:
    target = make_target(Simulator(redacted=True))
    history: list[Any] = [{"role": "user", "content": "hi"}]
    first = call(target, mode, messages=history, thinking={"type": "adaptive"})
    assert types_of(first) == ["thinking", "redacted_thinking", "text"]
    redacted = first.content[1]
    assert redacted.type == "redacted_thinking"
    assert redacted.data
    history += [as_dict(first), {"role": "user", "content": "more"}]
    call(target, mode, messages=history, thinking={"type": "adaptive"})
    history[1]["content"][1]["data"] = redacted.data[::-1]
    with pytest.raises(anthropic.BadRequestError, match=r"messages\.1\.content\.1: Invalid `data`"):
        call(target, mode, messages=history, thinking={"type": "adaptive"})


@pytest.mark.parametrize("mode", ["sync", "stream", "async_helper"])
def test_interleaved_thinking_between_tool_calls(make_target: Any, mode: str) -> None:
    target = make_target(Simulator(interleaved=True))
    history: list[Any] = [{"role": "user", "content": "Compare the offices."}]
    first = call(target, mode, messages=history, tools=[TIME, WEATHER], thinking={"type": "adaptive"})
    assert types_of(first) == ["thinking", "text", "tool_use", "thinking", "tool_use"]
    assert [b.name for b in first.content if b.type == "tool_use"] == ["get_time", "get_weather"]
    history += [first.to_param(), tool_results(first)]
    second = call(target, mode, messages=history, tools=[TIME, WEATHER], thinking={"type": "adaptive"})
    assert second.stop_reason == "end_turn"
    swapped = copy.deepcopy([history[0], as_dict(first), history[2]])
    content = swapped[1]["content"]
    content[2], content[4] = content[4], content[2]
    with pytest.raises(anthropic.BadRequestError, match=r"messages\.1\.content\.3"):
        call(target, mode, messages=swapped, tools=[TIME, WEATHER], thinking={"type": "adaptive"})


def test_no_thinking_without_a_thinking_request(sim: Simulator) -> None:
    message = sim.anthropic_client().messages.create(
        model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    )
    assert types_of(message) == ["text"]
    assert message.usage.output_tokens_details is None
    assert message.content[0].type == "text"
    assert message.content[0].text == "Here is the answer to: hi"


def test_thinking_size_and_stream_chunks() -> None:
    sim = Simulator(thinking_size=8192, stream_chunks=50)
    client = sim.anthropic_client()
    events = list(
        client.messages.create(
            model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}], thinking=THINKING, stream=True
        )
    )
    deltas = [e for e in events if e.type == "content_block_delta" and e.delta.type == "thinking_delta"]
    assert len(deltas) == 50
    text = "".join(e.delta.thinking for e in deltas)
    assert len(text.encode()) == 8192
    signatures = [e for e in events if e.type == "content_block_delta" and e.delta.type == "signature_delta"]
    assert len(signatures) == 1


def test_deterministic_across_simulators_and_secret_bound() -> None:
    params: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "hi"}],
        "thinking": THINKING,
    }
    one = Simulator().anthropic_client().messages.create(**params)
    two = Simulator().anthropic_client().messages.create(**params)
    other = Simulator(secret=b"other").anthropic_client().messages.create(**params)
    assert one.model_dump() == two.model_dump()
    assert one.content[0].signature != other.content[0].signature


def test_structured_output_parse_and_count_tokens(sim: Simulator) -> None:
    from pydantic import BaseModel

    class Weather(BaseModel):
        city: str
        temperature: int

    client = sim.anthropic_client()
    parsed = client.messages.parse(
        model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": "hi"}], output_format=Weather
    )
    assert parsed.parsed_output == Weather(city="sim-city", temperature=1)
    count = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert count.input_tokens > 0
