"""A short-lived application making Anthropic calls in every call mode, then ending by itself (``exit``)
or waiting for a signal (``wait``): ``python exit_app.py N exit|wait [sdk|sdk-private]``.

Without ``sdk`` it is unmodified (run it under ``opentelemetry-instrument`` with
``OTEL_TRACES_EXPORTER=loom_chain``); with ``sdk`` it sets up the SDK itself, as an application that
does not use the zero-code path would: a global tracer provider, a ``BatchSpanProcessor`` over the
chained exporter (its inner exporter from the environment), ``AnthropicInstrumentor``; with
``sdk-private`` the provider is only given to the instrumentor, never made global. Either way the
tracer provider's shutdown is left to the interpreter's exit.
"""

from __future__ import annotations

import asyncio
import sys
import time

import anthropic

THINKING = {"type": "enabled", "budget_tokens": 2048}
MODEL = "claude-sonnet-4-6"


def setup_sdk(*, global_provider: bool) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from loom_otel.exporters.chain import ChainedSpanExporter
    from loom_otel.instrumentation.anthropic import AnthropicInstrumentor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(ChainedSpanExporter()))
    if global_provider:
        trace.set_tracer_provider(provider)
    AnthropicInstrumentor().instrument(tracer_provider=provider)


def messages(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"question {i}"}]


async def async_calls(i: int) -> None:
    async with anthropic.AsyncAnthropic(max_retries=0) as client:  # its connections live in this loop
        await async_round(client, i)


async def async_round(client: anthropic.AsyncAnthropic, i: int) -> None:
    await client.messages.create(model=MODEL, max_tokens=4096, thinking=THINKING, messages=messages(i))
    stream = await client.messages.create(
        model=MODEL, max_tokens=4096, thinking=THINKING, messages=messages(i), stream=True
    )
    async for _ in stream:
        pass


def main(count: int) -> None:
    client = anthropic.Anthropic(max_retries=0)
    for i in range(count):
        client.messages.create(model=MODEL, max_tokens=4096, thinking=THINKING, messages=messages(i))
        for _ in client.messages.create(
            model=MODEL, max_tokens=4096, thinking=THINKING, messages=messages(i), stream=True
        ):
            pass
        with client.messages.stream(model=MODEL, max_tokens=4096, thinking=THINKING, messages=messages(i)) as s:
            s.get_final_message()
        asyncio.run(async_calls(i))


if __name__ == "__main__":
    if sys.argv[3:] in (["sdk"], ["sdk-private"]):
        setup_sdk(global_provider=sys.argv[3] == "sdk")
    main(int(sys.argv[1]))
    print("done", flush=True)
    if sys.argv[2] == "wait":
        time.sleep(600)  # until a signal ends the process
