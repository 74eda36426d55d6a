"""Every way an application sends an Anthropic request, written once: each returns the final message
the application ends up holding (for streams, what it accumulated from the events it was handed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from anthropic.lib.streaming._messages import accumulate_event

from loom_otel.testing.simulator import Simulator

Mode = Callable[[Simulator, dict[str, Any]], Any]


def _accumulate(events: list[Any]) -> Any:
    snapshot = None
    bufs: dict[int, bytes] = {}
    for event in events:
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=bufs)
    return snapshot


def sync_create(sim: Simulator, kw: dict[str, Any]) -> Any:
    return sim.anthropic_client().messages.create(**kw)


def async_create(sim: Simulator, kw: dict[str, Any]) -> Any:
    async def go() -> Any:
        return await sim.async_anthropic_client().messages.create(**kw)

    return asyncio.run(go())


def sync_stream(sim: Simulator, kw: dict[str, Any]) -> Any:
    with sim.anthropic_client().messages.create(stream=True, **kw) as stream:
        return _accumulate(list(stream))


def async_stream(sim: Simulator, kw: dict[str, Any]) -> Any:
    async def go() -> Any:
        stream = await sim.async_anthropic_client().messages.create(stream=True, **kw)
        return _accumulate([event async for event in stream])

    return asyncio.run(go())


def stream_helper(sim: Simulator, kw: dict[str, Any]) -> Any:
    with sim.anthropic_client().messages.stream(**kw) as stream:
        for _ in stream:
            pass
        return stream.get_final_message()


def async_stream_helper(sim: Simulator, kw: dict[str, Any]) -> Any:
    async def go() -> Any:
        async with sim.async_anthropic_client().messages.stream(**kw) as stream:
            return await stream.get_final_message()

    return asyncio.run(go())


MODES: dict[str, Mode] = {
    "sync": sync_create,
    "async": async_create,
    "stream": sync_stream,
    "async_stream": async_stream,
    "messages.stream": stream_helper,
    "async_messages.stream": async_stream_helper,
}
