"""An ordinary LlamaIndex agent: a ``FunctionAgent`` (streaming, as by default) with the Anthropic LLM,
thinking on, one tool, and the conversation in one ``Memory`` passed to each run."""

from __future__ import annotations

import asyncio

from _conversation import (
    ANTHROPIC_MODEL,
    BASE_URL,
    BINDING_BETA,
    DROP,
    anthropic_thinking,
    get_weather,
    run,
    system_prompt,
)
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.memory import Memory
from llama_index.llms.anthropic import Anthropic

llm = Anthropic(
    model=ANTHROPIC_MODEL,
    base_url=BASE_URL,
    api_key="sim",
    max_tokens=4096,
    max_retries=0,
    temperature=1.0,  # what the API asks for with thinking on
    thinking_dict=anthropic_thinking(),
    default_headers={"anthropic-beta": BINDING_BETA} if DROP else None,
)
agent = FunctionAgent(tools=[get_weather], llm=llm, system_prompt=system_prompt(1))
memory = Memory.from_defaults(session_id="travel", token_limit=100_000)
loop = asyncio.new_event_loop()  # one loop for the conversation: the client's connections belong to it


def turn(number: int, question: str) -> str:
    agent.system_prompt = system_prompt(number)  # variant system-turn: a new prompt per user turn

    async def ask() -> str:
        return str(await agent.run(question, memory=memory))

    return loop.run_until_complete(ask())


run(turn, held=lambda: [m.model_dump() for m in memory.get_all()])
