"""An ordinary Strands agent with one tool: its Anthropic model, or its default Bedrock model (the model
id Strands picks, the endpoint and credentials boto3 reads from the environment)."""

from __future__ import annotations

from typing import Any

from _conversation import ANTHROPIC_MODEL, BASE_URL, VARIANT, VENDOR, get_weather, run, system_prompt
from strands import Agent, tool
from strands.hooks import BeforeModelCallEvent
from strands.models.anthropic import AnthropicModel
from strands.models.bedrock import BedrockModel

model: Any
if VENDOR == "anthropic":
    model = AnthropicModel(
        client_args={"api_key": "sim", "base_url": BASE_URL},
        model_id=ANTHROPIC_MODEL,
        max_tokens=4096,
        params={"thinking": {"type": "adaptive"}},
    )
else:
    model = BedrockModel(additional_request_fields={"thinking": {"type": "adaptive"}})

agent = Agent(
    model=model,
    tools=[tool(get_weather)],
    system_prompt=system_prompt(1) if VARIANT != "system-call" else None,
    callback_handler=None,
)

if VARIANT == "system-call":

    def before_model_call(event: BeforeModelCallEvent) -> None:
        event.agent.system_prompt = system_prompt(0)

    agent.add_hook(before_model_call, BeforeModelCallEvent)


def turn(number: int, question: str) -> str:
    if VARIANT == "system-turn":
        agent.system_prompt = system_prompt(number)
    return str(agent(question)).strip()


run(turn)
