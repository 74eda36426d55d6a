"""An ordinary pydantic-ai agent (Anthropic or Gemini model) with one tool and a message history."""

from __future__ import annotations

from typing import Any

from _conversation import (
    ANTHROPIC_MODEL,
    BASE_URL,
    GEMINI_MODEL,
    VARIANT,
    VENDOR,
    anthropic_thinking,
    get_weather,
    run,
    system_prompt,
)
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.anthropic import AnthropicModel, AnthropicModelSettings
from pydantic_ai.models.google import GoogleModel, GoogleModelSettings
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.google import GoogleProvider

model: Any
settings: Any
if VENDOR == "anthropic":
    model = AnthropicModel(ANTHROPIC_MODEL, provider=AnthropicProvider(api_key="sim", base_url=BASE_URL))
    settings = AnthropicModelSettings(max_tokens=4096, anthropic_thinking=anthropic_thinking())
else:
    model = GoogleModel(GEMINI_MODEL, provider=GoogleProvider(api_key="sim", base_url=BASE_URL))
    settings = GoogleModelSettings(google_thinking_config={"include_thoughts": True})

agent = Agent(
    model,
    deps_type=int,
    model_settings=settings,
    tools=[get_weather],
    instructions=system_prompt(1) if VARIANT == "tools" else None,
    retries=0,
)

if VARIANT != "tools":

    @agent.instructions
    def instructions(ctx: RunContext[int]) -> str:
        return system_prompt(ctx.deps)


history: list[Any] = []


def turn(number: int, question: str) -> str:
    global history
    result = agent.run_sync(question, message_history=history, deps=number)
    history = result.all_messages()
    return str(result.output)


run(turn)
