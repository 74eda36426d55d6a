"""OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: prompts, answers and tool calls in the conventions'
shape on the model-call span, every reasoning part a reference (canary per vendor: never text, never
a signature)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
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
