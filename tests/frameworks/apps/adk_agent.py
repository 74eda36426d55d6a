"""An ordinary google-adk agent (``Gemini`` or ``AnthropicLlm``) with one tool, run by an in-memory
runner: one session is the conversation."""

from __future__ import annotations

import asyncio
from typing import Any

from _conversation import ANTHROPIC_MODEL, BASE_URL, GEMINI_MODEL, VARIANT, VENDOR, get_weather, run, system_prompt
from google.adk.agents import LlmAgent
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.models.anthropic_llm import AnthropicLlm
from google.adk.models.google_llm import Gemini
from google.adk.runners import InMemoryRunner
from google.genai import types

model: Any
if VENDOR == "anthropic":
    model = AnthropicLlm(model=ANTHROPIC_MODEL)  # AsyncAnthropic(): ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY
    thinking = types.ThinkingConfig(thinking_budget=-1)  # adaptive thinking, summarized
else:
    model = Gemini(model=GEMINI_MODEL, base_url=BASE_URL)
    thinking = types.ThinkingConfig(include_thoughts=True)

current_turn = [1]


def instruction(context: ReadonlyContext) -> str:
    return system_prompt(current_turn[0])


agent = LlmAgent(
    name="travel",
    model=model,
    instruction=instruction if VARIANT != "tools" else system_prompt(1),
    tools=[get_weather],
    generate_content_config=types.GenerateContentConfig(thinking_config=thinking, max_output_tokens=4096),
)
runner = InMemoryRunner(agent=agent, app_name="travel")
session = asyncio.run(runner.session_service.create_session(app_name="travel", user_id="user"))


def turn(number: int, question: str) -> str:
    current_turn[0] = number
    answer = ""
    message = types.Content(role="user", parts=[types.Part(text=question)])
    for event in runner.run(user_id="user", session_id=session.id, new_message=message):
        if event.error_code:
            raise RuntimeError(f"{event.error_code}: {event.error_message}")
        if event.is_final_response() and event.content and event.content.parts:
            answer = "".join(p.text or "" for p in event.content.parts if not p.thought)
    return answer


run(turn)
