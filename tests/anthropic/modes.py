"""Every way an application calls the Anthropic SDK, written once: each mode sends one request and
returns the final message the application ends up with."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from loom_otel.testing.simulator import Simulator
from tests.support.anthropic_sdk import accumulate

Mode = Callable[[Simulator, dict[str, Any]], Any]


def sync_create(sim: Simulator, kw: dict[str, Any]) -> Any:
    return sim.anthropic_client().messages.create(**kw)


def async_create(sim: Simulator, kw: dict[str, Any]) -> Any:
    async def go() -> Any:
        return await sim.async_anthropic_client().messages.create(**kw)

    return asyncio.run(go())


def sync_stream(sim: Simulator, kw: dict[str, Any]) -> Any:
    with sim.anthropic_client().messages.create(stream=True, **kw) as stream:
        return accumulate(list(stream))


def async_stream(sim: Simulator, kw: dict[str, Any]) -> Any:
    async def go() -> Any:
        stream = await sim.async_anthropic_client().messages.create(stream=True, **kw)
        return accumulate([event async for event in stream])

    return asyncio.run(go())


def stream_helper(sim: Simulator, kw: dict[str, Any]) -> Any:
    with sim.anthropic_client().messages.stream(**kw) as stream:
        for _ in stream.text_stream:
            pass
        return stream.get_final_message()


def async_stream_helper(sim: Simulator, kw: dict[str, Any]) -> Any:
    async def go() -> Any:
        async with sim.async_anthropic_client().messages.stream(**kw) as stream:
            return await stream.get_final_message()

    return asyncio.run(go())


def sync_parse(sim: Simulator, kw: dict[str, Any]) -> Any:
    return sim.anthropic_client().messages.parse(**kw)


def async_parse(sim: Simulator, kw: dict[str, Any]) -> Any:
    async def go() -> Any:
        return await sim.async_anthropic_client().messages.parse(**kw)

    return asyncio.run(go())


def beta_create(sim: Simulator, kw: dict[str, Any]) -> Any:
    return sim.anthropic_client().beta.messages.create(**kw)


def beta_stream_helper(sim: Simulator, kw: dict[str, Any]) -> Any:
    with sim.anthropic_client().beta.messages.stream(**kw) as stream:
        return stream.get_final_message()


def raw_create(sim: Simulator, kw: dict[str, Any]) -> Any:
    return sim.anthropic_client().messages.with_raw_response.create(**kw).parse()


MODES: dict[str, Mode] = {
    "sync": sync_create,
    "async": async_create,
    "stream": sync_stream,
    "async_stream": async_stream,
    "messages.stream": stream_helper,
    "async_messages.stream": async_stream_helper,
    "parse": sync_parse,
    "async_parse": async_parse,
    "beta": beta_create,
    "beta.stream": beta_stream_helper,
    "with_raw_response": raw_create,
}
"""Every mode, on every SDK line: a test of a mode the installed SDK lacks skips naming the release that has
it (tests/support/anthropic_sdk.py MODE_MINIMUM, applied by tests/anthropic/conftest.py)."""
STREAMING = ("stream", "async_stream", "messages.stream", "async_messages.stream", "beta.stream")


def request(**overrides: Any) -> dict[str, Any]:
    kw: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [{"role": "user", "content": "Should I pack an umbrella for Lyon tomorrow?"}],
    }
    kw.update(overrides)
    return kw
