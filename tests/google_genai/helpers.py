"""Gemini test helpers: one runner performing a user call in each call mode, and clients answering
from the wire fixtures."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from google import genai
from google.genai import types

MODEL = "gemini-3-flash-preview"
THOUGHT = "CANARY-thought-9d2e: the user wants the weather, so I look it up before answering."
MODES = ("sync", "async", "stream", "async_stream", "chat", "chat_stream", "async_chat", "async_chat_stream")
STREAMING = frozenset({"stream", "async_stream", "chat_stream", "async_chat_stream"})
CHATS = frozenset({"chat", "chat_stream", "async_chat", "async_chat_stream"})


def thinking(**kw: Any) -> types.GenerateContentConfig:
    kw.setdefault("thinking_config", types.ThinkingConfig(include_thoughts=True))
    return types.GenerateContentConfig(**kw)


def get_weather(location: str) -> str:
    """Returns the weather forecast for a location."""
    return f"Sunny in {location}."


@dataclass
class Outcome:
    """What the application received."""

    items: list[Any] = field(default_factory=list)  # responses, or stream chunks

    @property
    def thought_text(self) -> str:
        return "".join(
            p.text or ""
            for item in self.items
            for c in item.candidates or ()
            for p in (c.content.parts if c.content else None) or ()
            if p.thought
        )


def run(mode: str, client: genai.Client, contents: str = "Will it rain in Lyon?", **config: Any) -> Outcome:
    """One user call in ``mode``; streams are consumed fully."""
    cfg = thinking(**config)
    out = Outcome()
    if mode == "sync":
        out.items.append(client.models.generate_content(model=MODEL, contents=contents, config=cfg))
    elif mode == "stream":
        out.items.extend(client.models.generate_content_stream(model=MODEL, contents=contents, config=cfg))
    elif mode == "chat":
        out.items.append(client.chats.create(model=MODEL, config=cfg).send_message(contents))
    elif mode == "chat_stream":
        out.items.extend(client.chats.create(model=MODEL, config=cfg).send_message_stream(contents))
    else:
        asyncio.run(_run_async(mode, client, contents, cfg, out))
    return out


async def _run_async(mode: str, client: genai.Client, contents: str, cfg: Any, out: Outcome) -> None:
    aio = client.aio
    if mode == "async":
        out.items.append(await aio.models.generate_content(model=MODEL, contents=contents, config=cfg))
    elif mode == "async_stream":
        async for chunk in await aio.models.generate_content_stream(model=MODEL, contents=contents, config=cfg):
            out.items.append(chunk)
    elif mode == "async_chat":
        out.items.append(await aio.chats.create(model=MODEL, config=cfg).send_message(contents))
    else:
        async for chunk in await aio.chats.create(model=MODEL, config=cfg).send_message_stream(contents):
            out.items.append(chunk)


def wire_client(wire: Path, *, body: bytes | None = None, vertexai: bool = False, status: int = 200) -> genai.Client:
    """A client whose every request is answered from the wire fixtures (or ``body``)."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        if body is not None:
            return httpx2.Response(status, headers={"content-type": "application/json"}, content=body)
        if request.url.path.endswith(":streamGenerateContent"):
            content = (wire / "gemini_stream_thoughts.sse").read_bytes()
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content)
        content = (wire / "gemini_thought_function_call.json").read_bytes()
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=content)

    async def async_answer(request: httpx2.Request) -> httpx2.Response:
        return answer(request)

    options = types.HttpOptions(
        base_url="https://generativelanguage.test",
        httpx_client=httpx2.Client(transport=httpx2.MockTransport(answer)),
        httpx_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(async_answer)),
    )
    if vertexai:
        return genai.Client(vertexai=True, api_key="x", http_options=options)
    return genai.Client(api_key="x", http_options=options)


PLAIN_RESPONSE = json.dumps(
    {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Hello."}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5},
        "modelVersion": MODEL,
        "responseId": "plain-1",
    }
).encode()
