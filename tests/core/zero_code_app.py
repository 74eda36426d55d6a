"""An unmodified application run under ``opentelemetry-instrument`` by ``test_zero_code``: it knows
nothing of loom-otel and calls the three SDKs against the vendor simulator (in process).

``python zero_code_app.py every-mode``: one call in every call mode of each SDK, each caught; prints
one JSON object: per mode the exception's type and message (``null`` when the call returned), and how
many requests reached the simulator.
``python zero_code_app.py one-call``: one Anthropic call, nothing caught (an exception ends the process).
``python zero_code_app.py nothing``: imports no SDK, prints ``done``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

CLAUDE: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 4096,
    "thinking": {"type": "enabled", "budget_tokens": 2048},
    "messages": [{"role": "user", "content": "Should I pack an umbrella for Lyon tomorrow?"}],
}
GEMINI = "gemini-2.5-flash"
GPT: dict[str, Any] = {"model": "gpt-5", "messages": [{"role": "user", "content": "umbrella?"}]}


def modes(sim: Any) -> dict[str, Callable[[], Any]]:
    claude, aclaude = sim.anthropic_client(), sim.async_anthropic_client()
    gemini, gpt, agpt = sim.genai_client(), sim.openai_client(), sim.async_openai_client()

    def claude_stream() -> None:
        with claude.messages.create(stream=True, **CLAUDE) as stream:
            list(stream)

    def claude_helper() -> None:
        with claude.messages.stream(**CLAUDE) as stream:
            stream.get_final_message()

    async def aclaude_stream() -> None:
        stream = await aclaude.messages.create(stream=True, **CLAUDE)
        _ = [event async for event in stream]

    async def aclaude_helper() -> None:
        async with aclaude.messages.stream(**CLAUDE) as stream:
            await stream.get_final_message()

    async def agemini_chat() -> None:
        await gemini.aio.chats.create(model=GEMINI).send_message("umbrella?")

    async def agpt_stream() -> None:
        stream = await agpt.chat.completions.create(stream=True, **GPT)
        _ = [chunk async for chunk in stream]

    return {
        "anthropic create": lambda: claude.messages.create(**CLAUDE),
        "anthropic stream": claude_stream,
        "anthropic messages.stream": claude_helper,
        "anthropic with_raw_response": lambda: claude.messages.with_raw_response.create(**CLAUDE),
        "anthropic async create": lambda: asyncio.run(aclaude.messages.create(**CLAUDE)),
        "anthropic async stream": lambda: asyncio.run(aclaude_stream()),
        "anthropic async messages.stream": lambda: asyncio.run(aclaude_helper()),
        "gemini generate_content": lambda: gemini.models.generate_content(model=GEMINI, contents="umbrella?"),
        "gemini stream": lambda: list(gemini.models.generate_content_stream(model=GEMINI, contents="umbrella?")),
        "gemini chat": lambda: gemini.chats.create(model=GEMINI).send_message("umbrella?"),
        "gemini async chat": lambda: asyncio.run(agemini_chat()),
        "openai chat": lambda: gpt.chat.completions.create(**GPT),
        "openai responses": lambda: gpt.responses.create(model="gpt-5", input="umbrella?"),
        "openai async chat stream": lambda: asyncio.run(agpt_stream()),
    }


def every_mode() -> dict[str, Any]:
    from loom_otel.testing.simulator import Simulator

    sim = Simulator(reasoning_text="CANARY-zero-code-5c1")
    outcomes: dict[str, Any] = {}
    for name, call in modes(sim).items():
        try:
            call()
            outcomes[name] = None
        except Exception as exc:
            outcomes[name] = [type(exc).__name__, str(exc)]
    return {"outcomes": outcomes, "requests": len(sim.requests)}


def one_call() -> None:
    from loom_otel.testing.simulator import Simulator

    Simulator().anthropic_client().messages.create(**CLAUDE)
    print("returned")


if __name__ == "__main__":
    print("started", flush=True)
    if sys.argv[1] == "every-mode":
        print(json.dumps(every_mode()))
    elif sys.argv[1] == "one-call":
        one_call()
    else:
        print("done")
