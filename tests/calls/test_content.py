"""OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: prompts, answers and tool calls in the conventions'
shape on the model-call span, every reasoning part a reference (canary per vendor: never text, never
a signature)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.genai import types

from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator

CANARY = "CANARY-c0n7-content: I look the weather up before answering."
CLAUDE = "claude-sonnet-4-6"
TOOLS = [{"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}}]


def _spans(telemetry: Any, name: str) -> list[Any]:
    return [s for s in telemetry.spans if s.name == name]


def _anthropic_turns(client: Any, stream: bool) -> tuple[list[Any], list[str]]:
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    request = {
        "model": CLAUDE,
        "max_tokens": 2048,
        "system": "Be brief.",
        "tools": TOOLS,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    answers, signatures = [], []
    for _ in range(2):
        if stream:
            with client.messages.stream(messages=messages, **request) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(messages=messages, **request)
        answers.append(message)
        signatures += [b.signature for b in message.content if b.type == "thinking"]
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
        tool = next(b for b in message.content if b.type == "tool_use") if message.stop_reason == "tool_use" else None
        if tool is not None:
            messages.append(
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "Sunny"}]}
            )
        else:
            messages.append({"role": "user", "content": "Thanks"})
    return answers, signatures


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_span_only(config, stream):
    sim = Simulator(reasoning_text=CANARY)
    environ = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
    with instrumented(AnthropicInstrumentor(), config=config, environ=environ) as telemetry:
        answers, signatures = _anthropic_turns(sim.anthropic_client(), stream)
    first, second = _spans(telemetry, f"chat {CLAUDE}")
    assert json.loads(first.attributes["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be brief."}]
    assert json.loads(first.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
    ]
    (tool,) = json.loads(first.attributes["gen_ai.tool.definitions"])
    assert tool == {
        "type": "function",
        "name": "get_weather",
        "description": "Weather.",
        "parameters": {"type": "object"},
    }

    (output,) = json.loads(first.attributes["gen_ai.output.messages"])
    (event,) = [e for e in first.events if e.name == "loom.reasoning.captured"]
    (ref,), (digest,), (size,) = (event.attributes[f"loom.reasoning.part.{k}"] for k in ("ref", "digest", "size"))
    reasoning, *rest = output["parts"]
    assert reasoning["type"] == "reasoning"
    assert (reasoning["ref"], reasoning["digest"], reasoning["size"]) == (ref, digest, size)
    assert ref in reasoning["content"]
    assert output["role"] == "assistant" and output["finish_reason"] == "tool_call"
    call = next(p for p in rest if p["type"] == "tool_call")
    tool_use = next(b for b in answers[0].content if b.type == "tool_use")
    assert call == {"type": "tool_call", "name": "get_weather", "id": tool_use.id, "arguments": tool_use.input}

    sent = json.loads(second.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    sent_reasoning = sent[1]["parts"][0]
    assert sent_reasoning["type"] == "reasoning" and sent_reasoning["ref"] == ref  # the turn sent back, by reference
    assert sent[2]["parts"] == [{"type": "tool_call_response", "id": tool_use.id, "response": "Sunny"}]

    assert find_leaks([CANARY, *signatures], spans=telemetry.spans) == []


def test_anthropic_event_only_and_no_content(config):
    sim = Simulator(reasoning_text=CANARY)
    environ = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"}
    with instrumented(AnthropicInstrumentor(), config=config, environ=environ) as telemetry:
        _, signatures = _anthropic_turns(sim.anthropic_client(), False)
    span = _spans(telemetry, f"chat {CLAUDE}")[0]
    assert "gen_ai.input.messages" not in span.attributes
    (details,) = [e for e in span.events if e.name == "gen_ai.client.inference.operation.details"]
    assert {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"} <= set(details.attributes)
    assert find_leaks([CANARY, *signatures], spans=telemetry.spans) == []

    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        _anthropic_turns(sim.anthropic_client(), False)
    span = _spans(telemetry, f"chat {CLAUDE}")[0]
    assert not any(
        k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.system", "gen_ai.tool")) for k in span.attributes
    )
    assert not [e for e in span.events if e.name == "gen_ai.client.inference.operation.details"]


GEMINI = "gemini-3-flash-preview"


def _get_weather(location: str) -> str:
    """Returns the weather forecast for a location."""
    return f"Sunny in {location}."


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_span_only(config, stream):
    sim = Simulator(reasoning_text=CANARY)
    client = sim.genai_client()
    cfg = types.GenerateContentConfig(
        system_instruction="Be brief.",
        tools=[_get_weather],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        thinking_config=types.ThinkingConfig(include_thoughts=True),
    )
    environ = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="Rain in Lyon?")])]
    signatures: list[bytes] = []
    with instrumented(GoogleGenAiInstrumentor(), config=config, environ=environ) as telemetry:
        for _ in range(2):
            if stream:
                chunks = list(client.models.generate_content_stream(model=GEMINI, contents=contents, config=cfg))
                parts = [p for c in chunks for p in c.candidates[0].content.parts or ()]
            else:
                parts = (
                    client.models.generate_content(model=GEMINI, contents=contents, config=cfg)
                    .candidates[0]
                    .content.parts
                )
            signatures += [p.thought_signature for p in parts if p.thought_signature]
            contents.append(types.Content(role="model", parts=parts))
            call = next((p.function_call for p in parts if p.function_call), None)
            if call is None:
                break
            response = types.Part.from_function_response(name=call.name, response={"result": "Sunny"})
            contents.append(types.Content(role="user", parts=[response]))
    spans = _spans(telemetry, f"generate_content {GEMINI}")
    first = spans[0]
    assert json.loads(first.attributes["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be brief."}]
    assert json.loads(first.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Rain in Lyon?"}]}
    ]
    (tool,) = json.loads(first.attributes["gen_ai.tool.definitions"])
    assert tool["name"] == "_get_weather" and tool["type"] == "function"
    (output,) = json.loads(first.attributes["gen_ai.output.messages"])
    (event,) = [e for e in first.events if e.name == "loom.reasoning.captured"]
    refs = list(event.attributes["loom.reasoning.part.ref"])
    reasoning = [p for p in output["parts"] if p["type"] == "reasoning"]
    assert [p["ref"] for p in reasoning] == refs and all(p["digest"] for p in reasoning)
    assert any(p["type"] == "tool_call" and p["name"] == "_get_weather" for p in output["parts"])
    assert output["finish_reason"] == "tool_call"
    assert len(spans) == 2
    sent = json.loads(spans[1].attributes["gen_ai.input.messages"])
    assert sent[1]["role"] == "assistant"
    assert any(p["type"] == "reasoning" and p.get("ref") in refs for p in sent[1]["parts"])
    assert sent[2]["parts"][0]["type"] == "tool_call_response"
    secrets = [
        CANARY,
        *(base64.b64encode(s).decode() for s in signatures),
        *(base64.urlsafe_b64encode(s).decode() for s in signatures),
    ]
    assert find_leaks(secrets, spans=telemetry.spans) == []


def test_openai_chat_span_only(config):
    sim = Simulator(reasoning_text=CANARY)
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    environ = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
    messages: list[Any] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Cheaper?"}]
    with instrumented(OpenAiInstrumentor(), config=config, environ=environ) as telemetry:
        client = sim.openai_client()
        first = client.chat.completions.create(model="deepseek-reasoner", messages=messages, tools=tools)
        message = first.choices[0].message
        call = message.tool_calls[0]
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "reasoning_content": message.model_extra["reasoning_content"],
                "tool_calls": [call.model_dump()],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "A"})
        client.chat.completions.create(model="deepseek-reasoner", messages=messages, tools=tools)
    one, two = _spans(telemetry, "chat deepseek-reasoner")
    assert json.loads(one.attributes["gen_ai.input.messages"])[0] == {
        "role": "system",
        "parts": [{"type": "text", "content": "Be brief."}],
    }
    (output,) = json.loads(one.attributes["gen_ai.output.messages"])
    (event,) = [e for e in one.events if e.name == "loom.reasoning.captured"]
    (ref,) = event.attributes["loom.reasoning.part.ref"]
    assert output["parts"][0]["type"] == "reasoning" and output["parts"][0]["ref"] == ref
    assert {
        "type": "tool_call",
        "name": "lookup",
        "id": call.id,
        "arguments": json.loads(call.function.arguments),
    } in output["parts"]
    assert output["finish_reason"] == "tool_call"
    sent = json.loads(two.attributes["gen_ai.input.messages"])
    assert sent[2]["parts"][0]["ref"] == ref
    assert sent[3] == {"role": "tool", "parts": [{"type": "tool_call_response", "id": call.id, "response": "A"}]}
    assert find_leaks([CANARY], spans=telemetry.spans) == []


def test_openai_responses_span_and_event(config):
    sim = Simulator(reasoning_text=CANARY)
    tools = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
    environ = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT"}
    kwargs: dict[str, Any] = {
        "model": "o4-mini",
        "reasoning": {"summary": "auto"},
        "tools": tools,
        "instructions": "Brief.",
    }
    with instrumented(OpenAiInstrumentor(), config=config, environ=environ) as telemetry:
        client = sim.openai_client()
        first = client.responses.create(input="Cheaper?", **kwargs)
        call = next(i for i in first.output if i.type == "function_call")
        items = [
            {"role": "user", "content": "Cheaper?"},
            *[i.model_dump(exclude_none=True) for i in first.output],
            {"type": "function_call_output", "call_id": call.call_id, "output": "A"},
        ]
        client.responses.create(input=items, **kwargs)
    signatures = [i.encrypted_content for i in first.output if i.type == "reasoning" and i.encrypted_content]
    one, two = _spans(telemetry, "chat o4-mini")
    assert json.loads(one.attributes["gen_ai.system_instructions"]) == [{"type": "text", "content": "Brief."}]
    (details,) = [e for e in one.events if e.name == "gen_ai.client.inference.operation.details"]
    assert details.attributes["gen_ai.output.messages"] == one.attributes["gen_ai.output.messages"]
    (output,) = json.loads(one.attributes["gen_ai.output.messages"])
    (event,) = [e for e in one.events if e.name == "loom.reasoning.captured"]
    assert [p["ref"] for p in output["parts"] if p["type"] == "reasoning"] == list(
        event.attributes["loom.reasoning.part.ref"]
    )
    assert output["finish_reason"] == "tool_call"
    sent = json.loads(two.attributes["gen_ai.input.messages"])
    reasoning = [p for m in sent for p in m["parts"] if p["type"] == "reasoning"]
    assert reasoning and all(p.get("ref") in event.attributes["loom.reasoning.part.ref"] for p in reasoning)
    assert find_leaks([CANARY, *signatures], spans=telemetry.spans) == []


@pytest.mark.parametrize("shape", ["reasoning_part", "thinking_part", "reasoning_content"])
def test_openai_chat_reasoning_sent_back_is_a_reference(config, shape):
    """A Chat assistant message sending the reasoning back as a content part (``{"type": "reasoning",
    "text"}``, as OpenAI-compatible frameworks write it) or as ``reasoning_content``: its reference."""
    sim = Simulator(reasoning_text=CANARY)
    environ = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT"}
    messages: list[Any] = [{"role": "user", "content": "Cheaper?"}]
    with instrumented(OpenAiInstrumentor(), config=config, environ=environ) as telemetry:
        client = sim.openai_client()
        first = client.chat.completions.create(model="deepseek-reasoner", messages=messages)
        reasoning = first.choices[0].message.model_extra["reasoning_content"]
        answer = {"type": "text", "text": first.choices[0].message.content}
        if shape == "reasoning_content":
            messages.append({"role": "assistant", "content": [answer], "reasoning_content": reasoning})
        else:
            kind = "reasoning" if shape == "reasoning_part" else "thinking"
            messages.append({"role": "assistant", "content": [{"type": kind, "text": reasoning}, answer]})
        messages.append({"role": "user", "content": "And?"})
        client.chat.completions.create(model="deepseek-reasoner", messages=messages)
    assert reasoning == CANARY
    one, two = _spans(telemetry, "chat deepseek-reasoner")
    (event,) = [e for e in one.events if e.name == "loom.reasoning.captured"]
    (ref,) = event.attributes["loom.reasoning.part.ref"]
    (details,) = [e for e in two.events if e.name == "gen_ai.client.inference.operation.details"]
    for sent in (two.attributes["gen_ai.input.messages"], details.attributes["gen_ai.input.messages"]):
        assistant = json.loads(sent)[1]
        (part,) = [p for p in assistant["parts"] if p["type"] == "reasoning"]
        assert part["ref"] == ref and part["content"].startswith("[loom-otel reasoning text ref=")
        assert {"type": "text", "content": answer["text"]} in assistant["parts"]
    assert find_leaks([CANARY], spans=telemetry.spans) == []


def test_reasoning_part_links_to_the_viewer_when_it_is_set(store, journal_dir):
    """With ``LOOM_OTEL_VIEWER_URL``, the answer's reasoning part is a markdown link to the call's page
    (``[<marker>](<loom.reasoning.url>)``, which Phoenix's message view renders as a link) and holds the
    URL; the reference, digest and size stay; still no text, no signature."""
    from loom_otel.core import ReasoningConfig

    config = ReasoningConfig(store=store, journal=journal_dir, viewer_url="https://viewer.example/loom/")
    sim = Simulator(reasoning_text=CANARY)
    environ = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
    with instrumented(AnthropicInstrumentor(), config=config, environ=environ) as telemetry:
        _, signatures = _anthropic_turns(sim.anthropic_client(), False)
    first = _spans(telemetry, f"chat {CLAUDE}")[0]
    url = first.attributes["loom.reasoning.url"]
    assert url.startswith("https://viewer.example/loom/executions/")
    (output,) = json.loads(first.attributes["gen_ai.output.messages"])
    reasoning = output["parts"][0]
    assert reasoning["url"] == url
    assert (
        reasoning["content"]
        == f"[loom-otel reasoning text ref={reasoning['ref']} digest={reasoning['digest']} size={reasoning['size']}]({url})"
    )
    assert find_leaks([CANARY, *signatures], spans=telemetry.spans) == []
