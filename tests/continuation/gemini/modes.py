"""Every way an application sends a Gemini turn, written once. Each mode takes the history the
application holds and the new user message, and returns the history after the model's answer (chats:
``get_history()``; generate_content: the contents sent plus what came back, one content per chunk
for streams, as a chat keeps them) and the responses or chunks it was handed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from google import genai
from google.genai import types

from loom_otel.testing.simulator import Simulator

MODEL = "gemini-3-flash-preview"
Mode = Callable[[Simulator, list[Any], Any, types.GenerateContentConfig], tuple[list[Any], list[Any]]]


def user(message: Any) -> types.Content:
    parts = [types.Part(text=message)] if isinstance(message, str) else list(message)
    return types.Content(role="user", parts=parts)


def _contents(history: list[Any], message: Any) -> list[Any]:
    return [*history, user(message)]


def _model(items: list[Any]) -> list[Any]:
    return [i.candidates[0].content for i in items if i.candidates and i.candidates[0].content]


def sync(sim: Simulator, history: list[Any], message: Any, cfg: Any) -> tuple[list[Any], list[Any]]:
    contents = _contents(history, message)
    client = sim.genai_client()
    response = client.models.generate_content(model=MODEL, contents=contents, config=cfg)
    return [*contents, *_model([response])], [response]


def stream(sim: Simulator, history: list[Any], message: Any, cfg: Any) -> tuple[list[Any], list[Any]]:
    contents = _contents(history, message)
    client = sim.genai_client()
    chunks = list(client.models.generate_content_stream(model=MODEL, contents=contents, config=cfg))
    return [*contents, *_model(chunks)], chunks


def async_(sim: Simulator, history: list[Any], message: Any, cfg: Any) -> tuple[list[Any], list[Any]]:
    contents = _contents(history, message)

    client = sim.genai_client()

    async def go() -> Any:
        return await client.aio.models.generate_content(model=MODEL, contents=contents, config=cfg)

    response = asyncio.run(go())
    return [*contents, *_model([response])], [response]


def async_stream(sim: Simulator, history: list[Any], message: Any, cfg: Any) -> tuple[list[Any], list[Any]]:
    contents = _contents(history, message)

    async def go() -> list[Any]:
        client = sim.genai_client()
        aio = client.aio
        return [c async for c in await aio.models.generate_content_stream(model=MODEL, contents=contents, config=cfg)]

    chunks = asyncio.run(go())
    return [*contents, *_model(chunks)], chunks


def _chat(client: genai.Client, history: list[Any], cfg: Any) -> Any:
    return client.chats.create(model=MODEL, config=cfg, history=list(history))


def chat(sim: Simulator, history: list[Any], message: Any, cfg: Any) -> tuple[list[Any], list[Any]]:
    client = sim.genai_client()
    session = _chat(client, history, cfg)
    response = session.send_message(message)
    return session.get_history(), [response]


def chat_stream(sim: Simulator, history: list[Any], message: Any, cfg: Any) -> tuple[list[Any], list[Any]]:
    client = sim.genai_client()
    session = _chat(client, history, cfg)
    chunks = list(session.send_message_stream(message))
    return session.get_history(), chunks


def async_chat(sim: Simulator, history: list[Any], message: Any, cfg: Any) -> tuple[list[Any], list[Any]]:
    async def go() -> tuple[list[Any], list[Any]]:
        client = sim.genai_client()
        session = client.aio.chats.create(model=MODEL, config=cfg, history=list(history))
        response = await session.send_message(message)
        return session.get_history(), [response]

    return asyncio.run(go())


def async_chat_stream(sim: Simulator, history: list[Any], message: Any, cfg: Any) -> tuple[list[Any], list[Any]]:
    async def go() -> tuple[list[Any], list[Any]]:
        client = sim.genai_client()
        session = client.aio.chats.create(model=MODEL, config=cfg, history=list(history))
        chunks = [c async for c in await session.send_message_stream(message)]
        return session.get_history(), chunks

    return asyncio.run(go())


MODES: dict[str, Mode] = {
    "sync": sync,
    "async": async_,
    "stream": stream,
    "async_stream": async_stream,
    "chat": chat,
    "async_chat": async_chat,
    "chat_stream": chat_stream,
    "async_chat_stream": async_chat_stream,
}
STREAMING = frozenset({"stream", "async_stream", "chat_stream", "async_chat_stream"})
