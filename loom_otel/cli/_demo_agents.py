"""The agent loops ``loom-otel demo`` runs: real vendor SDK clients against the built-in simulator."""

from __future__ import annotations

from typing import Any

__all__ = ["anthropic_loop", "edited_history", "gemini_loop"]

QUESTION = "Should I pack an umbrella for Lyon tomorrow?"
WEATHER = "Rain, 12 C, 80% chance after 3 pm."
TOOLS = [
    {
        "name": "get_weather",
        "description": "The weather forecast for a city and a date.",
        "input_schema": {
            "type": "object",
            "properties": {"location": {"type": "string"}, "date": {"type": "string"}},
            "required": ["location"],
        },
    }
]
ANTHROPIC_REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 4096,
    "tools": TOOLS,
    "thinking": {"type": "adaptive", "display": "summarized"},
}


def anthropic_loop(sim: Any) -> tuple[int, list[dict[str, Any]]]:
    """A tool loop through ``messages.stream()``; each assistant turn goes back as returned."""
    client = sim.anthropic_client()
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    calls = 0
    while True:
        with client.messages.stream(messages=messages, **ANTHROPIC_REQUEST) as stream:
            message = stream.get_final_message()
        calls += 1
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
        if message.stop_reason != "tool_use":
            return calls, messages
        call = next(b for b in message.content if b.type == "tool_use")
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": WEATHER}]}
        )


def edited_history(sim: Any, history: list[dict[str, Any]]) -> tuple[str, Any]:
    """The app fixes a typo in the first question and asks a follow-up on the same history: the vendor
    binds every earlier thinking block to the old question. Returns what the bare SDK got (the 400) and
    the instrumented call's answer."""
    import anthropic
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    edited = [{"role": "user", "content": QUESTION.replace("Lyon", "Lyon (France)")}, *history[1:]]
    edited.append({"role": "user", "content": "And the day after?"})
    client = sim.anthropic_client()
    refused = ""
    with suppress_instrumentation():
        try:
            client.messages.create(messages=edited, **ANTHROPIC_REQUEST)
        except anthropic.BadRequestError as exc:
            refused = f"{exc.status_code} {exc.body['error']['message'] if isinstance(exc.body, dict) else exc}"
    return refused, client.messages.create(messages=edited, **ANTHROPIC_REQUEST)


def get_weather(location: str, date: str = "tomorrow") -> str:
    """The weather forecast for a city and a date."""
    return f"{WEATHER} ({location}, {date})"


def gemini_loop(sim: Any) -> int:
    """A chat with automatic function calling: one ``send_message``, a model request per hop, each
    captured with its thought summaries and signatures; the chat sends them back itself."""
    from google.genai import types

    client = sim.genai_client()
    config = types.GenerateContentConfig(
        tools=[get_weather], thinking_config=types.ThinkingConfig(include_thoughts=True)
    )
    chat = client.chats.create(model="gemini-3-flash-preview", config=config)
    chat.send_message(QUESTION)
    return len([c for c in chat.get_history() if c.role == "model"])
