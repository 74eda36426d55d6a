"""The Gemini API against the real google-genai SDK: thoughts, signatures, chats, AFC, strict rules."""

from __future__ import annotations

import asyncio
import base64
from importlib.metadata import version
from typing import Any

import pytest
from google.genai import errors, types

from loom_otel.testing.simulator import Simulator

MODEL = "gemini-3-flash-preview"
CANARY = "CANARY-reasoning-7f3a"
THOUGHTS = types.ThinkingConfig(include_thoughts=True, thinking_level=types.ThinkingLevel.HIGH)
WEATHER = types.FunctionDeclaration(
    name="get_weather",
    description="Weather for a city.",
    parameters_json_schema={"type": "object", "properties": {"location": {"type": "string"}}},
)
TIME = types.FunctionDeclaration(
    name="get_time",
    description="Local time.",
    parameters=types.Schema(type=types.Type.OBJECT, properties={"zone": types.Schema(type=types.Type.STRING)}),
)
MODES = ["sync", "async", "stream", "async_stream"]
API_VERSION = "v1" if int(version("google-genai").split(".")[0]) >= 3 else "v1beta"
"""The Gemini API version the SDK sends to by default (google-genai 3.0 moved it from v1beta to v1)."""


def config(*declarations: types.FunctionDeclaration, thoughts: bool = True) -> types.GenerateContentConfig:
    tools = [types.Tool(function_declarations=list(declarations))] if declarations else None
    return types.GenerateContentConfig(
        tools=tools,
        thinking_config=THOUGHTS if thoughts else None,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def generate(target: Any, mode: str, contents: Any, cfg: types.GenerateContentConfig) -> list[types.Part]:
    """The model's parts in order (streamed chunks concatenated)."""
    client = target.genai_client()
    if mode == "sync":
        response = client.models.generate_content(model=MODEL, contents=contents, config=cfg)
        return list(response.candidates[0].content.parts)
    if mode == "stream":
        chunks = list(client.models.generate_content_stream(model=MODEL, contents=contents, config=cfg))
        return [p for c in chunks for p in c.candidates[0].content.parts]

    async def run() -> list[types.Part]:
        if mode == "async":
            response = await client.aio.models.generate_content(model=MODEL, contents=contents, config=cfg)
            return list(response.candidates[0].content.parts)
        stream = await client.aio.models.generate_content_stream(model=MODEL, contents=contents, config=cfg)
        return [p async for c in stream for p in c.candidates[0].content.parts]

    return asyncio.run(run())


@pytest.mark.parametrize("mode", MODES)
def test_text_answer_with_thoughts_and_signature_on_the_last_part(target: Any, mode: str) -> None:
    parts = generate(target, mode, "Is 97 prime?", config())
    thoughts = [p for p in parts if p.thought]
    assert "".join(p.text or "" for p in thoughts) == CANARY
    assert parts[0].thought
    assert parts[-1].thought_signature
    assert not any(p.thought_signature for p in parts[:-1])
    answer = "".join(p.text or "" for p in parts if not p.thought)
    assert answer == "Here is the answer to: Is 97 prime?"
    if "stream" in mode:
        assert parts[-1].text == ""
        assert len(thoughts) == 5
    path = target.sim.requests[-1].path
    assert path.startswith(f"/{API_VERSION}/models/{MODEL}:")


def test_no_thought_parts_without_include_thoughts(sim: Simulator) -> None:
    client = sim.genai_client()  # keep the client alive: a collected genai.Client closes its httpx client
    response = client.models.generate_content(model=MODEL, contents="hi", config=config(thoughts=False))
    parts = response.candidates[0].content.parts
    assert [p.thought for p in parts] == [None]
    assert parts[0].thought_signature
    assert response.usage_metadata.thoughts_token_count > 0
    assert response.model_version == MODEL
    assert response.response_id


@pytest.mark.parametrize("mode", MODES)
def test_parallel_calls_carry_one_signature(target: Any, mode: str) -> None:
    parts = generate(target, mode, "Weather and time?", config(WEATHER, TIME))
    calls = [p for p in parts if p.function_call]
    assert [c.function_call.name for c in calls] == ["get_weather", "get_time"]
    assert calls[0].function_call.args == {"location": "sim-location"}
    assert calls[1].function_call.args == {"zone": "sim-zone"}
    assert calls[0].thought_signature
    assert calls[1].thought_signature is None


def _tool_turn(client: Any, *declarations: types.FunctionDeclaration) -> list[types.Content]:
    user = types.Content(role="user", parts=[types.Part(text="Weather in Lyon?")])
    response = client.models.generate_content(model=MODEL, contents=[user], config=config(*declarations))
    model = response.candidates[0].content
    answers = [
        types.Part.from_function_response(name=p.function_call.name, response={"result": "sunny"})
        for p in model.parts
        if p.function_call
    ]
    return [user, model, types.Content(role="user", parts=answers)]


def test_function_call_round_trip_is_accepted_url_safe(sim: Simulator) -> None:
    client = sim.genai_client()
    contents = _tool_turn(client, WEATHER, TIME)
    response = client.models.generate_content(model=MODEL, contents=contents, config=config(WEATHER, TIME))
    assert response.text == "Based on the tool results, here is the answer to: Weather in Lyon?"
    sent = sim.requests[-1].body["contents"][1]["parts"]
    signature = next(p["thoughtSignature"] for p in sent if "thoughtSignature" in p)
    assert signature == base64.urlsafe_b64encode(contents[1].parts[1].thought_signature).decode()


def test_missing_signature_is_rejected(sim: Simulator) -> None:
    client = sim.genai_client()
    contents = _tool_turn(client, WEATHER)
    for part in contents[1].parts:
        part.thought_signature = None
    with pytest.raises(errors.ClientError) as raised:
        client.models.generate_content(model=MODEL, contents=contents, config=config(WEATHER))
    assert raised.value.code == 400
    assert raised.value.status == "INVALID_ARGUMENT"
    assert "Function call `get_weather` in the `1.` content block is missing a `thought_signature`" in str(raised.value)


def test_signature_moved_to_the_second_parallel_call_is_rejected(sim: Simulator) -> None:
    client = sim.genai_client()
    contents = _tool_turn(client, WEATHER, TIME)
    first, second = (p for p in contents[1].parts if p.function_call)
    second.thought_signature, first.thought_signature = first.thought_signature, None
    with pytest.raises(errors.ClientError, match="missing a `thought_signature`"):
        client.models.generate_content(model=MODEL, contents=contents, config=config(WEATHER, TIME))


@pytest.mark.parametrize("change", ["signature", "prefix", "tools"])
def test_corrupted_signature_is_rejected(sim: Simulator, change: str) -> None:
    client = sim.genai_client()
    contents = _tool_turn(client, WEATHER)
    cfg = config(WEATHER)
    if change == "signature":
        contents[1].parts[-1].thought_signature = b"\x0a\x9a\x02" + bytes(40)
    elif change == "prefix":
        contents[0].parts[0].text = "Weather in Paris?"
    else:
        cfg = config(WEATHER, TIME)
    with pytest.raises(errors.ClientError, match="Corrupted thought signature"):
        client.models.generate_content(model=MODEL, contents=contents, config=cfg)


def test_only_the_current_turn_is_checked_and_model_is_not_bound(sim: Simulator) -> None:
    client = sim.genai_client()
    contents = _tool_turn(client, WEATHER)
    client.models.generate_content(model="gemini-3-pro-preview", contents=contents, config=config(WEATHER))
    for part in contents[1].parts:
        part.thought_signature = None
    contents.append(types.Content(role="model", parts=[types.Part(text="Sunny.")]))
    contents.append(types.Content(role="user", parts=[types.Part(text="Thanks!")]))
    client.models.generate_content(model=MODEL, contents=contents, config=config(WEATHER))
    sim.strict = False
    client.models.generate_content(model=MODEL, contents=contents[:3], config=config(WEATHER))


def test_chat_send_message_and_stream_keep_signatures(target: Any) -> None:
    client = target.genai_client()
    chat = client.chats.create(model=MODEL, config=config(WEATHER))
    first = chat.send_message("Weather in Lyon?")
    assert first.function_calls and first.function_calls[0].name == "get_weather"
    answer = types.Part.from_function_response(name="get_weather", response={"result": "sunny"})
    assert chat.send_message(answer).text.startswith("Based on the tool results")
    chunks = list(chat.send_message_stream("And in Paris?"))
    assert any(c.function_calls for c in chunks)
    final = list(chat.send_message_stream(answer))
    assert "".join(c.text or "" for c in final).startswith("Based on the tool results")
    assert len(target.sim.requests) == 4


async def test_async_chat_stream(sim: Simulator) -> None:
    client = sim.genai_client()
    chat = client.aio.chats.create(model=MODEL, config=config(WEATHER))
    async for _ in await chat.send_message_stream("Weather?"):
        pass
    answer = types.Part.from_function_response(name="get_weather", response={"result": "sunny"})
    texts = [c.text async for c in await chat.send_message_stream(answer)]
    assert "".join(t or "" for t in texts).startswith("Based on the tool results")


def get_weather(location: str) -> str:
    """Weather for a city."""
    return f"sunny in {location}"


def test_automatic_function_calling(target: Any) -> None:
    cfg = types.GenerateContentConfig(tools=[get_weather], thinking_config=THOUGHTS)
    client = target.genai_client()
    chat = client.chats.create(model=MODEL, config=cfg)
    response = chat.send_message("Weather in Lyon?")
    assert response.text == "Based on the tool results, here is the answer to: Weather in Lyon?"
    history = chat.get_history()
    assert [c.role for c in history] == ["user", "model", "user", "model"]
    assert any(p.thought_signature for c in history for p in c.parts or [] if p.function_call)
    assert len(target.sim.requests) == 2
    assert chat.send_message("And tomorrow?").text


async def test_async_automatic_function_calling(sim: Simulator) -> None:
    cfg = types.GenerateContentConfig(tools=[get_weather], thinking_config=THOUGHTS)
    client = sim.genai_client()
    response = await client.aio.models.generate_content(model=MODEL, contents="Weather?", config=cfg)
    assert response.text == "Based on the tool results, here is the answer to: Weather?"


def test_max_tool_rounds_and_structured_output() -> None:
    sim = Simulator(max_tool_rounds=2)
    cfg = types.GenerateContentConfig(tools=[get_weather])
    client = sim.genai_client()
    client.models.generate_content(model=MODEL, contents="Weather?", config=cfg)
    assert len(sim.requests) == 3
    structured = types.GenerateContentConfig(
        response_mime_type="application/json",
        response_json_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
    )
    response = client.models.generate_content(model=MODEL, contents="n?", config=structured)
    assert response.parsed == {"n": 1}
