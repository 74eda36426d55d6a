"""OpenAI test helpers: one runner performing a user call in each call mode of Chat Completions and of
the Responses API, returning the reasoning text the application saw."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import openai

from loom_otel.testing.simulator import Simulator

CHAT_MODEL = "deepseek-reasoner"
RESPONSES_MODEL = "o4-mini"
THOUGHT = "CANARY-reasoning-51c0: compare both options, then answer with the cheaper one."
MODES = ("sync", "async", "stream", "async_stream", "helper", "async_helper", "parse", "async_parse")
STREAMING = frozenset({"stream", "async_stream", "helper", "async_helper"})
FIELDS = ("reasoning_content", "reasoning")


def _chat_text(completion: Any) -> str:
    extra = completion.choices[0].message.model_extra or {}
    return str(extra.get("reasoning_content") or extra.get("reasoning") or "")


def _chat_delta(chunk: Any) -> str:
    if not chunk.choices:
        return ""
    extra = chunk.choices[0].delta.model_extra or {}
    return str(extra.get("reasoning_content") or extra.get("reasoning") or "")


def _responses_text(response: Any) -> str:
    return "".join("\n\n".join(s.text for s in item.summary) for item in response.output if item.type == "reasoning")


def _responses_delta(event: Any) -> str:
    return str(event.delta) if event.type == "response.reasoning_summary_text.delta" else ""


def _kwargs(api: str, tools: bool | list[dict[str, Any]], overrides: dict[str, Any]) -> dict[str, Any]:
    """``tools``: the default ``lookup`` tool, or the tool list to send."""
    if isinstance(tools, list):
        return _kwargs(api, False, {"tools": tools, **overrides})
    tool_list = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    if api == "chat":
        extra = {"tools": tool_list} if tools else {}
        messages = [{"role": "user", "content": "Which is cheaper?"}]
        return {"model": CHAT_MODEL, "messages": messages, **extra, **overrides}
    extra = {"tools": [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]} if tools else {}
    return {
        "model": RESPONSES_MODEL,
        "input": "Which is cheaper?",
        "reasoning": {"summary": "auto"},
        **extra,
        **overrides,
    }


def run(
    api: str, mode: str, make: Callable[[bool], Any], *, tools: bool | list[dict[str, Any]] = False, **overrides: Any
) -> str:
    """One user call of ``api`` (``chat`` | ``responses``) in ``mode`` on a fresh client (``make(is_async)``);
    returns the reasoning text the application saw. ``overrides`` replace request arguments."""
    if mode.startswith("async"):
        return asyncio.run(_run_async(api, mode, make(True), tools, overrides))
    client = make(False)
    resource = client.chat.completions if api == "chat" else client.responses
    text, delta = (_chat_text, _chat_delta) if api == "chat" else (_responses_text, _responses_delta)
    kwargs = _kwargs(api, tools, overrides)
    if mode in ("sync", "parse"):
        return text(getattr(resource, "create" if mode == "sync" else "parse")(**kwargs))
    if mode == "stream":
        return "".join(delta(chunk) for chunk in resource.create(stream=True, **kwargs))
    with resource.stream(**kwargs) as stream:
        return "".join(delta(e.chunk if api == "chat" else e) for e in stream if api != "chat" or e.type == "chunk")


async def _run_async(
    api: str, mode: str, client: Any, tools: bool | list[dict[str, Any]], overrides: dict[str, Any]
) -> str:
    if not isinstance(client, openai.AsyncOpenAI):
        raise TypeError("async modes need an AsyncOpenAI client")
    resource: Any = client.chat.completions if api == "chat" else client.responses
    text, delta = (_chat_text, _chat_delta) if api == "chat" else (_responses_text, _responses_delta)
    kwargs = _kwargs(api, tools, overrides)
    if mode in ("async", "async_parse"):
        return text(await getattr(resource, "create" if mode == "async" else "parse")(**kwargs))
    if mode == "async_stream":
        return "".join([delta(chunk) async for chunk in await resource.create(stream=True, **kwargs)])
    async with resource.stream(**kwargs) as stream:
        return "".join(
            [delta(e.chunk if api == "chat" else e) async for e in stream if api != "chat" or e.type == "chunk"]
        )


def respond(sim: Simulator, mode: str, kwargs: dict[str, Any], events: list[Any]) -> Any:
    """One Responses request in ``mode``: the final response the application ends up with (stream events kept)."""
    if mode.startswith("async"):
        return asyncio.run(_respond_async(sim, mode, kwargs, events))
    client = sim.openai_client()
    if mode in ("sync", "parse"):
        return getattr(client.responses, "create" if mode == "sync" else "parse")(**kwargs)
    if mode == "stream":
        got = list(client.responses.create(stream=True, **kwargs))
        events.extend(got)
        return next(e.response for e in got if e.type == "response.completed")
    with client.responses.stream(**kwargs) as stream:
        events.extend(stream)
        return stream.get_final_response()


async def _respond_async(sim: Simulator, mode: str, kwargs: dict[str, Any], events: list[Any]) -> Any:
    client = sim.async_openai_client()
    if mode in ("async", "async_parse"):
        return await getattr(client.responses, "create" if mode == "async" else "parse")(**kwargs)
    if mode == "async_stream":
        got = [e async for e in await client.responses.create(stream=True, **kwargs)]
        events.extend(got)
        return next(e.response for e in got if e.type == "response.completed")
    async with client.responses.stream(**kwargs) as stream:
        events.extend([e async for e in stream])
        return await stream.get_final_response()
