"""The request guard on real SDK request shapes: Untrusted refused in every instruction position of the
three SDKs, the fenced form accepted in a user message and refused elsewhere, reasoning blocks refused
outside the assistant's turns."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from anthropic.types import RedactedThinkingBlock, TextBlock, ThinkingBlock
from google.genai import types as genai
from openai.types.chat import ChatCompletionMessage

from loom_otel.core import LoomOtelError, ReasoningConfigError, Untrusted
from loom_otel.instrumentation.anthropic._guard import check_anthropic_request
from loom_otel.instrumentation.google_genai._guard import check_gemini_request
from loom_otel.instrumentation.openai._guard import check_openai_chat_request, check_openai_responses_request

CANARY = "CANARY-7f3a-secret-thought"
U = Untrusted(f"the model thought {CANARY}", origin="llm-reasoning:plan")
F = U.fenced()


def refused(check: Callable[[], None], position: str) -> ReasoningConfigError:
    with pytest.raises(ReasoningConfigError) as info:
        check()
    message = str(info.value)
    assert isinstance(info.value, LoomOtelError)
    assert position in message, message
    assert CANARY not in message
    return info.value


# -- Anthropic ------------------------------------------------------------------------------------


def anthropic(**overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are careful."}],
        "tools": [{"name": "lookup", "description": "Look a thing up", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "hello"}],
    }
    kwargs.update(overrides)
    return kwargs


ANTHROPIC_INSTRUCTIONS: dict[str, tuple[dict[str, Any], str]] = {
    "system": (anthropic(system=U), "system"),
    "system block": (anthropic(system=[{"type": "text", "text": U}]), "system[0].text"),
    "tool description": (
        anthropic(tools=[{"name": "t", "description": U, "input_schema": {"type": "object"}}]),
        "tools[0].description",
    ),
    "tool schema": (
        anthropic(
            tools=[
                {
                    "name": "t",
                    "description": "d",
                    "input_schema": {"type": "object", "properties": {"q": {"type": "string", "description": U}}},
                }
            ]
        ),
        "tools[0].input_schema.properties.q.description",
    ),
}


@pytest.mark.parametrize("value", ["untrusted", "fenced"])
@pytest.mark.parametrize("case", sorted(ANTHROPIC_INSTRUCTIONS))
def test_anthropic_instruction_positions(case: str, value: str) -> None:
    kwargs, position = ANTHROPIC_INSTRUCTIONS[case]
    if value == "fenced":
        kwargs = _replace(kwargs, U, F)
    error = refused(lambda: check_anthropic_request(kwargs), position)
    assert "llm-reasoning:plan" in str(error)
    assert "instruction" in str(error)


def test_anthropic_user_message() -> None:
    check_anthropic_request(anthropic(messages=[{"role": "user", "content": F}]))
    check_anthropic_request(anthropic(messages=[{"role": "user", "content": [{"type": "text", "text": F}]}]))
    check_anthropic_request(
        anthropic(
            messages=[
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": F}]},
            ]
        )
    )
    error = refused(
        lambda: check_anthropic_request(
            anthropic(messages=[{"role": "user", "content": [{"type": "text", "text": U}]}])
        ),
        "messages[0].content[0].text",
    )
    assert ".fenced()" in str(error)


def test_anthropic_fenced_outside_user_messages() -> None:
    refused(
        lambda: check_anthropic_request(
            anthropic(messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": F}])
        ),
        "messages[1].content",
    )
    refused(lambda: check_anthropic_request(anthropic(metadata={"user_id": F})), "metadata.user_id")


def test_anthropic_reasoning_blocks_only_in_assistant_turns() -> None:
    thinking = ThinkingBlock(type="thinking", thinking="t", signature="sig")
    assistant = {"role": "assistant", "content": [thinking, TextBlock(type="text", text="answer")]}
    check_anthropic_request(anthropic(messages=[{"role": "user", "content": "q"}, assistant]))
    blocks: list[Any] = [
        {"type": "thinking", "thinking": "t", "signature": "s"},
        RedactedThinkingBlock(type="redacted_thinking", data="opaque"),
    ]
    for block in blocks:
        kwargs = anthropic(messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}, block]}])
        error = refused(partial(check_anthropic_request, kwargs), "messages[0].content[1]")
        assert "opaque" not in str(error)


# -- Google GenAI ---------------------------------------------------------------------------------


def sdk(cls: Any, value: Any, **fields: Any) -> Any:
    """An SDK object; pydantic refuses an ``Untrusted`` field, so that case is built unvalidated."""
    return cls(**fields) if isinstance(value, str) else cls.model_construct(**fields)


GEMINI_INSTRUCTIONS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "system_instruction str": (
        lambda v: sdk(genai.GenerateContentConfig, v, system_instruction=v),
        "config.system_instruction",
    ),
    "system_instruction Content": (
        lambda v: genai.GenerateContentConfig(
            system_instruction=sdk(genai.Content, v, parts=[sdk(genai.Part, v, text=v)])
        ),
        "config.system_instruction.parts[0].text",
    ),
    "system_instruction dict": (
        lambda v: {"system_instruction": {"parts": [{"text": v}]}},
        "config.system_instruction.parts[0].text",
    ),
    "function description": (
        lambda v: genai.GenerateContentConfig(
            tools=[genai.Tool(function_declarations=[sdk(genai.FunctionDeclaration, v, name="f", description=v)])]
        ),
        "config.tools[0].function_declarations[0].description",
    ),
    "parameter description": (
        lambda v: {
            "tools": [
                {
                    "function_declarations": [
                        {"name": "f", "parameters": {"type": "OBJECT", "properties": {"q": {"description": v}}}}
                    ]
                }
            ]
        },
        "config.tools[0].function_declarations[0].parameters.properties.q.description",
    ),
}


@pytest.mark.parametrize("value", [U, F], ids=["untrusted", "fenced"])
@pytest.mark.parametrize("case", sorted(GEMINI_INSTRUCTIONS))
def test_gemini_instruction_positions(case: str, value: Any) -> None:
    build, position = GEMINI_INSTRUCTIONS[case]
    config = build(value)
    error = refused(lambda: check_gemini_request("hello", config), position)
    assert "instruction" in str(error)


def test_an_empty_untrusted_is_refused_as_any_other() -> None:
    """The guard skips a field only when it is ``None``: an empty ``Untrusted`` (falsy, it has a length)
    is refused in a config given as a dict, as an SDK object, and nested in a message."""
    empty = Untrusted("", origin="llm-reasoning:plan")
    refused(lambda: check_gemini_request("hi", {"system_instruction": empty}), "config.system_instruction")
    config = genai.GenerateContentConfig.model_construct(system_instruction=empty)  # as set, unvalidated
    refused(lambda: check_gemini_request("hi", config), "config.system_instruction")
    refused(lambda: check_anthropic_request(anthropic(system=[{"type": "text", "text": empty}])), "system[0].text")


def test_gemini_fenced_in_user_contents() -> None:
    check_gemini_request(F, None)
    check_gemini_request([F, genai.Part(text="and this")], genai.GenerateContentConfig(temperature=0.1))
    check_gemini_request(genai.Content(role="user", parts=[genai.Part(text=F)]), None)
    check_gemini_request([{"role": "user", "parts": [{"text": F}]}], {"temperature": 0.2})
    refused(
        lambda: check_gemini_request([genai.Content(role="model", parts=[genai.Part(text=F)])], None),
        "contents[0].parts[0].text",
    )
    error = refused(lambda: check_gemini_request(["hi", U], None), "contents[1]")
    assert ".fenced()" in str(error)
    refused(lambda: check_gemini_request({"role": "user", "parts": [{"text": U}]}, None), "contents.parts[0].text")


def test_gemini_thought_parts_only_in_model_contents() -> None:
    thought = genai.Part(text="thinking", thought=True, thought_signature=b"\x01\x02")
    check_gemini_request(
        [genai.Content(role="user", parts=[genai.Part(text="q")]), genai.Content(role="model", parts=[thought])], None
    )
    refused(lambda: check_gemini_request([genai.Content(role="user", parts=[thought])], None), "contents[0].parts[0]")
    refused(lambda: check_gemini_request([thought], None), "contents[0]")
    refused(lambda: check_gemini_request({"parts": [{"text": "x", "thought": True}]}, None), "contents.parts[0]")


# -- OpenAI ---------------------------------------------------------------------------------------


def chat(**overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": "gpt-5",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}],
        "tools": [{"type": "function", "function": {"name": "f", "description": "does f", "parameters": {}}}],
    }
    kwargs.update(overrides)
    return kwargs


CHAT_INSTRUCTIONS: dict[str, tuple[dict[str, Any], str]] = {
    "system": (chat(messages=[{"role": "system", "content": U}]), "messages[0].content"),
    "developer parts": (
        chat(messages=[{"role": "developer", "content": [{"type": "text", "text": U}]}]),
        "messages[0].content[0].text",
    ),
    "tool description": (
        chat(tools=[{"type": "function", "function": {"name": "f", "description": U}}]),
        "tools[0].function.description",
    ),
}


@pytest.mark.parametrize("value", ["untrusted", "fenced"])
@pytest.mark.parametrize("case", sorted(CHAT_INSTRUCTIONS))
def test_openai_chat_instruction_positions(case: str, value: str) -> None:
    kwargs, position = CHAT_INSTRUCTIONS[case]
    if value == "fenced":
        kwargs = _replace(kwargs, U, F)
    assert "instruction" in str(refused(lambda: check_openai_chat_request(kwargs), position))


def test_openai_chat_messages() -> None:
    check_openai_chat_request(chat(messages=[{"role": "user", "content": [{"type": "text", "text": F}]}]))
    check_openai_chat_request(chat(messages=[{"role": "tool", "tool_call_id": "c1", "content": F}]))
    assistant = ChatCompletionMessage(role="assistant", content="ok")
    check_openai_chat_request(chat(messages=[{"role": "user", "content": "q"}, assistant]))
    refused(
        lambda: check_openai_chat_request(chat(messages=[ChatCompletionMessage(role="assistant", content=F)])),
        "messages[0].content",
    )
    refused(lambda: check_openai_chat_request(chat(messages=[{"role": "user", "content": U}])), "messages[0].content")
    refused(
        lambda: check_openai_chat_request(
            chat(messages=[{"role": "user", "content": "q", "reasoning_content": "thinking"}])
        ),
        "messages[0].reasoning_content",
    )


RESPONSES_INSTRUCTIONS: dict[str, tuple[dict[str, Any], str]] = {
    "instructions": ({"model": "gpt-5", "instructions": U, "input": "hi"}, "instructions"),
    "system item": (
        {"model": "gpt-5", "input": [{"role": "system", "content": [{"type": "input_text", "text": U}]}]},
        "input[0].content[0].text",
    ),
    "developer item": ({"model": "gpt-5", "input": [{"role": "developer", "content": U}]}, "input[0].content"),
    "tool description": (
        {"model": "gpt-5", "input": "hi", "tools": [{"type": "function", "name": "f", "description": U}]},
        "tools[0].description",
    ),
    "prompt variable": (
        {"model": "gpt-5", "prompt": {"id": "pmpt_1", "variables": {"topic": U}}},
        "prompt.variables.topic",
    ),
}


@pytest.mark.parametrize("value", ["untrusted", "fenced"])
@pytest.mark.parametrize("case", sorted(RESPONSES_INSTRUCTIONS))
def test_openai_responses_instruction_positions(case: str, value: str) -> None:
    kwargs, position = RESPONSES_INSTRUCTIONS[case]
    if value == "fenced":
        kwargs = _replace(kwargs, U, F)
    assert "instruction" in str(refused(lambda: check_openai_responses_request(kwargs), position))


def test_openai_responses_input() -> None:
    check_openai_responses_request({"model": "gpt-5", "input": F})
    check_openai_responses_request(
        {"model": "gpt-5", "input": [{"role": "user", "content": [{"type": "input_text", "text": F}]}]}
    )
    check_openai_responses_request(
        {"model": "gpt-5", "input": [{"type": "function_call_output", "call_id": "c", "output": F}]}
    )
    refused(lambda: check_openai_responses_request({"model": "gpt-5", "input": U}), "input")
    refused(
        lambda: check_openai_responses_request(
            {
                "model": "gpt-5",
                "input": [{"type": "reasoning", "id": "r", "summary": [{"type": "summary_text", "text": F}]}],
            }
        ),
        "input[0].summary[0].text",
    )


def test_guard_is_cheap_on_a_long_history() -> None:
    import time

    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": "x" * 2000} for i in range(400)]
    kwargs = anthropic(messages=messages)
    started = time.perf_counter()
    for _ in range(20):
        check_anthropic_request(kwargs)
    assert (time.perf_counter() - started) / 20 < 0.02  # well under a model call's cost


def _replace(value: Any, old: Any, new: Any) -> Any:
    if value is old:
        return new
    if isinstance(value, dict):
        return {k: _replace(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    if isinstance(value, str) and isinstance(old, Untrusted) and value == old:
        return new
    return value
