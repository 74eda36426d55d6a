"""An ordinary OpenAI Agents SDK app: a triage agent that hands off to a travel agent with one tool, on
the Responses API with reasoning summaries and ``store=False`` (the reasoning items come back with their
``encrypted_content`` and go out again in the next request's input); ``Runner.run``, or
``Runner.run_streamed`` (variant ``streamed``). The SDK's own trace export is the application's default."""

from __future__ import annotations

import asyncio
from typing import Any

from _conversation import BASE_URL, OPENAI_MODEL, VARIANT, get_weather, run, system_prompt
from agents import Agent, ModelSettings, OpenAIResponsesModel, RunContextWrapper, Runner, function_tool
from openai import AsyncOpenAI
from openai.types.shared import Reasoning

client = AsyncOpenAI(base_url=f"{BASE_URL}/v1", api_key="sim", max_retries=0)
model = OpenAIResponsesModel(model=OPENAI_MODEL, openai_client=client)
settings = ModelSettings(
    reasoning=Reasoning(effort="medium", summary="auto"),
    store=False,
    response_include=["reasoning.encrypted_content"],
)
current_turn = [1]


def instructions(context: RunContextWrapper[Any], agent: Agent[Any]) -> str:
    return system_prompt(current_turn[0])  # variant system-call: a new prompt at every model call


travel = Agent(
    name="travel",
    instructions=instructions if VARIANT.startswith("system-") else system_prompt(1),
    model=model,
    model_settings=settings,
    tools=[function_tool(get_weather)],
)
triage = Agent(
    name="triage",
    instructions="Hand every travel question to the travel agent.",
    model=model,
    model_settings=settings,
    handoffs=[travel],
)
loop = asyncio.new_event_loop()  # one loop for the conversation: the client's connections belong to it
history: list[Any] = []
agent: Agent[Any] = triage


async def answer(question: str) -> Any:
    conversation = [*history, {"role": "user", "content": question}]
    if VARIANT == "streamed":
        streamed = Runner.run_streamed(agent, conversation)
        async for _event in streamed.stream_events():
            pass
        return streamed
    return await Runner.run(agent, conversation)


def turn(number: int, question: str) -> str:
    global agent, history
    current_turn[0] = number
    result = loop.run_until_complete(answer(question))
    history, agent = result.to_input_list(), result.last_agent
    return str(result.final_output)


run(turn, held=lambda: history)
