"""An ordinary CrewAI crew of two agents on its native Anthropic or Gemini provider (no LiteLLM): a
researcher with a tool, then a writer without one, run once per question.

FW_VARIANT ``tools``: thinking on the writer only (the tool-less agent); ``both``: thinking on both agents
(CrewAI resends the researcher's tool-use turn without its thinking block: refused by the vendor);
``both-execution``: the same, each kickoff inside loom-otel's ``execution()`` (the one line an app adds
so that loom-otel restores the stripped round; a no-op where loom-otel is not instrumented)."""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from typing import Any

from _conversation import ANTHROPIC_MODEL, BASE_URL, GEMINI_MODEL, VARIANT, VENDOR, get_weather, run, system_prompt
from crewai import LLM, Agent, Crew, Process, Task
from crewai.tools import tool


def llm(thinking: bool) -> LLM:
    if VENDOR == "anthropic":
        extra: dict[str, Any] = {"thinking": {"type": "enabled", "budget_tokens": 2048}} if thinking else {}
        return LLM(
            model=ANTHROPIC_MODEL, provider="anthropic", api_key="sim", base_url=BASE_URL, max_tokens=4096, **extra
        )
    from google.genai import types

    config = types.ThinkingConfig(include_thoughts=thinking)
    return LLM(
        model=GEMINI_MODEL,
        provider="gemini",
        api_key="sim",
        client_params={"http_options": {"base_url": BASE_URL}},
        thinking_config=config,
    )


both = VARIANT.startswith("both")
weather = tool("get_weather")(get_weather)
researcher = Agent(
    role="Researcher",
    goal="Find the facts a travel plan needs",
    backstory=system_prompt(1),
    llm=llm(thinking=both),
    tools=[weather],
    allow_delegation=False,
    max_iter=6,
)
writer = Agent(
    role="Writer",
    goal="Write the answer for the traveller",
    backstory="You write short, friendly travel answers.",
    llm=llm(thinking=True),
    allow_delegation=False,
)


def scope() -> AbstractContextManager[object]:
    """The conversation's execution (both kickoffs in one), or nothing."""
    if VARIANT == "both-execution":
        from loom_otel.core import execution

        return execution("crew-lisbon-trip")
    return contextlib.nullcontext()


def turn(number: int, question: str) -> str:
    research = Task(
        description=f"{question} Check the weather in Lisbon with the tool first.",
        expected_output="The facts, with the weather",
        agent=researcher,
    )
    answer = Task(description=f"Answer the traveller: {question}", expected_output="The answer", agent=writer)
    crew = Crew(agents=[researcher, writer], tasks=[research, answer], process=Process.sequential, verbose=False)
    with scope():
        return str(crew.kickoff().raw).strip()


run(turn)
