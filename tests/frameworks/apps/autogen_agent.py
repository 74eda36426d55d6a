"""An ordinary AutoGen AgentChat app: an ``AssistantAgent`` with one tool looping over its tool calls,
on AutoGen's Anthropic client with thinking on (AutoGen resends each thought as a text block: refused
bare, the in-flight tool round must start with its thinking block) or its OpenAI client (an
OpenAI-compatible reasoning endpoint, ``reasoning_content``), streamed in variant ``execution-streamed``.
Variants ``execution`` and ``execution-streamed``: the app names its
conversation with ``loom_otel.core.execution()``, the one line a user adds to have loom-otel restore the
thinking AutoGen stripped (a no-op bare: loom-otel is installed, not instrumented)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from _conversation import ANTHROPIC_MODEL, BASE_URL, VARIANT, VENDOR, get_weather, run, system_prompt
from autogen_agentchat.agents import AssistantAgent
from autogen_core.models import ModelInfo

OPENAI_MODEL = "deepseek-reasoner"
info = ModelInfo(vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False)
client: Any
if VENDOR == "anthropic":
    from autogen_ext.models.anthropic import AnthropicChatCompletionClient

    client = AnthropicChatCompletionClient(
        model=ANTHROPIC_MODEL,
        api_key="sim",
        base_url=BASE_URL,
        max_tokens=4096,
        max_retries=0,
        thinking={"type": "enabled", "budget_tokens": 2048},
        model_info=info,
    )
else:
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    client = OpenAIChatCompletionClient(
        model=OPENAI_MODEL, api_key="sim", base_url=f"{BASE_URL}/v1", max_retries=0, model_info=info
    )

agent = AssistantAgent(
    "travel",
    model_client=client,
    tools=[get_weather],
    system_message=system_prompt(1),
    max_tool_iterations=10,
    model_client_stream=VARIANT.endswith("streamed"),
)
loop = asyncio.new_event_loop()  # one loop for the conversation: the client's connections belong to it
conversation: Any = contextlib.nullcontext()
if VARIANT.startswith("execution"):
    from loom_otel.core import execution

    conversation = execution("travel-conversation")


def turn(number: int, question: str) -> str:
    result = loop.run_until_complete(agent.run(task=question))
    return str(result.messages[-1].content)


with conversation:
    run(turn)
