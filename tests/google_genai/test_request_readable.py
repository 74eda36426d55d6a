"""``LOOM_OTEL_REQUEST_READABLE=summarized`` on google-genai: a ``thinking_config`` without
``include_thoughts`` is sent with it, the thoughts are kept and taken out of what the application gets
(responses, chunks, chat history); the strict simulator accepts every later request. Differential: the
same script, bare and instrumented, in every call mode (chats and streams included)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from google.genai import types

from loom_otel.core import LoomOtelWarning, ReasoningConfig
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.instrumentation.google_genai._readable import readable_config
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.google_genai.helpers import MODEL, MODES

CANARY = "CANARY-readable-gemini-77f0"
WEATHER = types.FunctionDeclaration(
    name="get_weather",
    description="Weather for a city.",
    parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
_MASKED = frozenset(
    {
        "response_id",
        "thought_signature",
        "prompt_token_count",
        "prompt_tokens_details",
        "total_token_count",
        "sdk_http_response",
    }
)


def _config(thinking: types.ThinkingConfig | None = None) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        thinking_config=thinking or types.ThinkingConfig(thinking_budget=1024),
        tools=[types.Tool(function_declarations=[WEATHER])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def _answer(call: types.FunctionCall) -> types.Part:
    return types.Part.from_function_response(name=call.name or "", response={"forecast": "Rain."})


def _calls(items: list[Any]) -> list[types.FunctionCall]:
    return [
        p.function_call for i in items for c in i.candidates or () for p in c.content.parts or () if p.function_call
    ]


async def _script_async(client: Any, mode: str, config: types.GenerateContentConfig) -> list[Any]:
    received: list[Any] = []
    aio = client.aio
    if mode in ("async_chat", "async_chat_stream"):
        chat = aio.chats.create(model=MODEL, config=config)

        async def send(message: Any) -> list[Any]:
            if mode == "async_chat":
                return [await chat.send_message(message)]
            return [chunk async for chunk in await chat.send_message_stream(message)]

        items = await send("Umbrella in Lyon?")
        received += items
        received += await send(_answer(_calls(items)[0]))
        received += await send("And Paris?")
        received.append(chat.get_history())
        return received
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="Umbrella in Lyon?")])]

    async def call() -> list[Any]:
        if mode == "async":
            items = [await aio.models.generate_content(model=MODEL, contents=list(contents), config=config)]
        else:
            stream = await aio.models.generate_content_stream(model=MODEL, contents=list(contents), config=config)
            items = [chunk async for chunk in stream]
        contents.extend(c.content for i in items for c in i.candidates or () if c.content)
        return items

    items = await call()
    received += items
    contents.append(types.Content(role="user", parts=[_answer(_calls(items)[0])]))
    received += await call()
    contents.append(types.Content(role="user", parts=[types.Part(text="And Paris?")]))
    received += await call()
    return received


def _script(sim: Simulator, mode: str, config: types.GenerateContentConfig) -> list[Any]:
    """A function call, its answer, then a next turn: everything the application received (and, for a
    chat, its history)."""
    client = sim.genai_client()
    if mode.startswith("async"):
        return asyncio.run(_script_async(client, mode, config))
    received: list[Any] = []
    if mode in ("chat", "chat_stream"):
        chat = client.chats.create(model=MODEL, config=config)

        def send(message: Any) -> list[Any]:
            return [chat.send_message(message)] if mode == "chat" else list(chat.send_message_stream(message))

        items = send("Umbrella in Lyon?")
        received += items
        received += send(_answer(_calls(items)[0]))
        received += send("And Paris?")
        received.append(chat.get_history())
        return received
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="Umbrella in Lyon?")])]

    def call() -> list[Any]:
        if mode == "sync":
            items = [client.models.generate_content(model=MODEL, contents=list(contents), config=config)]
        else:
            items = list(client.models.generate_content_stream(model=MODEL, contents=list(contents), config=config))
        contents.extend(c.content for i in items for c in i.candidates or () if c.content)
        return items

    items = call()
    received += items
    contents.append(types.Content(role="user", parts=[_answer(_calls(items)[0])]))
    received += call()
    contents.append(types.Content(role="user", parts=[types.Part(text="And Paris?")]))
    received += call()
    return received


def _view(received: list[Any]) -> list[Any]:
    """What the application received, with what a signer or a request hash makes masked."""

    def mask(value: Any, key: str = "") -> Any:
        if key in _MASKED:
            return "<masked>" if value is not None else None
        if isinstance(value, dict):
            return {k: mask(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [mask(v) for v in value]
        return value

    out = []
    for item in received:
        if isinstance(item, list):  # a chat's history
            out.append([mask(c.model_dump(mode="json", exclude_none=True)) for c in item])
        else:
            out.append(mask(item.model_dump(mode="json", exclude_none=True)))
    return out


@pytest.mark.parametrize("mode", MODES)
def test_the_app_sees_the_bare_run_and_the_thoughts_are_kept(mode, store, journal_dir, caplog):
    caplog.set_level(logging.DEBUG, logger="loom_otel")
    bare_sim = Simulator(reasoning_text=f"Look up the weather. {CANARY}", stream_chunks=3)
    bare = _script(bare_sim, mode, _config())
    sim = Simulator(reasoning_text=f"Look up the weather. {CANARY}", stream_chunks=3)
    config = ReasoningConfig(store=store, journal=journal_dir, request_readable="summarized")
    app_config = _config()
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        received = _script(sim, mode, app_config)

    assert _view(received) == _view(bare)
    assert app_config.thinking_config is not None and app_config.thinking_config.include_thoughts is None
    sent = [r.body for r in sim.requests]
    assert len(sent) == 3
    assert all(b["generationConfig"]["thinkingConfig"]["include_thoughts"] is True for b in sent)
    assert "include_thoughts" not in str(bare_sim.requests[0].body)
    for body in sent[1:]:  # put back where they were, so every later signature still binds
        assert CANARY in "".join(p["text"] for c in body["contents"] for p in c["parts"] if p.get("thought"))
    events = reasoning_events(telemetry.spans)
    assert len(events) == 3
    for event in events:
        assert event["loom.reasoning.part.kind"][0] == "summary"
        ref = event["loom.reasoning.part.ref"][0]
        assert CANARY in (store.get(ref, tenant=None, execution_id=event["loom.execution.id"]) or b"").decode()
        assert event["loom.request.readable"] == "summarized"
        assert event["loom.request.thinking.budget"] == 1024
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text]) == []
    assert find_leaks([CANARY], texts=[repr(received), *map(str, _view(received))]) == []


def test_a_request_that_includes_thoughts_is_sent_as_it_is(store, journal_dir):
    sim = Simulator(reasoning_text=f"Look up the weather. {CANARY}")
    config = ReasoningConfig(store=store, journal=journal_dir, request_readable="summarized")
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        response = sim.genai_client().models.generate_content(
            model=MODEL, contents="Hi", config=_config(types.ThinkingConfig(include_thoughts=True))
        )
    assert any(p.thought and CANARY in (p.text or "") for p in response.candidates[0].content.parts)
    (event,) = reasoning_events(telemetry.spans)
    assert "loom.request.readable" not in event and event["loom.request.thinking.include_thoughts"] is True


def test_the_config_asked_for_is_a_copy():
    as_dict = {"thinking_config": {"thinking_budget": 512}, "temperature": 0.2}
    assert readable_config(as_dict) == {
        "temperature": 0.2,
        "thinking_config": {"thinking_budget": 512, "include_thoughts": True},
    }
    assert as_dict == {"thinking_config": {"thinking_budget": 512}, "temperature": 0.2}
    assert readable_config({"thinkingConfig": {"thinkingBudget": 0}}) is None  # thinking off
    assert readable_config({"temperature": 0.2}) is None and readable_config(None) is None
    sdk = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_level="HIGH"))
    asked = readable_config(sdk)
    assert asked.thinking_config.include_thoughts is True and sdk.thinking_config.include_thoughts is None


def test_no_thoughts_warns_once_naming_the_setting(store, journal_dir):
    sim = Simulator(reasoning_text=CANARY)
    with pytest.warns(LoomOtelWarning, match="LOOM_OTEL_REQUEST_READABLE") as caught:
        with instrumented(GoogleGenAiInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)):
            for _ in range(2):
                sim.genai_client().models.generate_content(model=MODEL, contents="Umbrella?", config=_config())
    assert len([w for w in caught if "REQUEST_READABLE" in str(w.message)]) == 1


def get_weather(city: str) -> str:
    """Returns the weather forecast for a city."""
    return f"Rain in {city}."


@pytest.mark.parametrize("mode", ["chat", "async_chat"])
def test_automatic_function_calling_hands_on_the_bare_history(mode, store, journal_dir):
    def script(sim: Simulator) -> list[Any]:
        config = types.GenerateContentConfig(
            thinking_config=types.ThinkingConfig(thinking_budget=1024), tools=[get_weather]
        )
        client = sim.genai_client()

        async def go() -> list[Any]:
            chat = client.aio.chats.create(model=MODEL, config=config)
            return [
                await chat.send_message("Umbrella in Lyon?"),
                await chat.send_message("And Paris?"),
                chat.get_history(),
            ]

        if mode == "async_chat":
            return asyncio.run(go())
        chat = client.chats.create(model=MODEL, config=config)
        return [chat.send_message("Umbrella in Lyon?"), chat.send_message("And Paris?"), chat.get_history()]

    bare = script(Simulator(reasoning_text=f"Look up the weather. {CANARY}"))
    sim = Simulator(reasoning_text=f"Look up the weather. {CANARY}")
    config = ReasoningConfig(store=store, journal=journal_dir, request_readable="summarized")
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        received = script(sim)
    assert len(sim.requests) == 4  # two turns, each a function call and its answer
    assert _view(received) == _view(bare)
    history = received[2]  # the chat keeps the AFC turns: the call and its response, without thoughts
    assert any(p.function_response for c in history for p in c.parts or ())
    assert not any(p.thought for c in history for p in c.parts or ())
    assert find_leaks([CANARY], texts=[repr(received)]) == []
    events = reasoning_events(telemetry.spans)
    assert len(events) >= 2 and all(e["loom.reasoning.part.kind"][0] == "summary" for e in events) and len(store) >= 1
