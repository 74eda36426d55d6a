"""An ordinary LangChain + LangGraph agent: ``create_agent`` with ``ChatAnthropic`` and one tool."""

from __future__ import annotations

from typing import Any

from _conversation import (
    ANTHROPIC_MODEL,
    BASE_URL,
    BINDING_BETA,
    DROP,
    VARIANT,
    anthropic_thinking,
    get_weather,
    run,
    system_prompt,
)
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool

weather = tool(get_weather)
model = ChatAnthropic(
    model=ANTHROPIC_MODEL,
    base_url=BASE_URL,
    api_key="sim",
    max_tokens=4096,
    max_retries=0,
    thinking=anthropic_thinking(),
    betas=[BINDING_BETA] if DROP else None,
)


@dynamic_prompt
def prompt(request: ModelRequest) -> str:
    turn = sum(1 for m in request.state["messages"] if m.type == "human")
    return system_prompt(turn)


middleware = [prompt] if VARIANT != "tools" else []
agent = create_agent(
    model, [weather], system_prompt=system_prompt(1) if VARIANT == "tools" else None, middleware=middleware
)
history: list[Any] = []


def turn(number: int, question: str) -> str:
    global history
    result = agent.invoke({"messages": [*history, {"role": "user", "content": question}]})
    history = result["messages"]
    return str(history[-1].text)


run(turn)
