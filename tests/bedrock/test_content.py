"""OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT on Converse: prompts, answers and tool calls in the
conventions' shape, reasoning only by reference (sent back included), in both call modes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.instrumentation.bedrock import BedrockInstrumentor
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.bedrock.helpers import CANARY, MODEL, MODES, THOUGHT, request


@pytest.fixture
def sim() -> Simulator:
    return Simulator(reasoning_text=THOUGHT, max_tool_rounds=1)


@pytest.mark.parametrize("mode", list(MODES))
def test_span_only_content_holds_reasoning_by_reference(mode, client, tmp_path: Path):
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal")
    environ = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
    with instrumented(BedrockInstrumentor(), config=config, environ=environ) as telemetry:
        system = [{"text": "Be brief."}]
        first = MODES[mode](client, request(tools=True, system=system))
        message = first["output"]["message"]
        (use,) = [b["toolUse"] for b in message["content"] if "toolUse" in b]
        result = {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": "rain"}]}}],
        }
        MODES[mode](client, request(tools=True, system=system, messages=[*request()["messages"], message, result]))

    one, two = [s for s in telemetry.spans if s.name == f"chat {MODEL}"]
    assert json.loads(one.attributes["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be brief."}]
    (tool,) = json.loads(one.attributes["gen_ai.tool.definitions"])
    assert tool["name"] == "get_weather" and tool["type"] == "function"
    (output,) = json.loads(one.attributes["gen_ai.output.messages"])
    (event,) = [e for e in one.events if e.name == "loom.reasoning.captured"]
    (ref,) = event.attributes["loom.reasoning.part.ref"]
    reasoning, *rest = output["parts"]
    assert reasoning["type"] == "reasoning" and reasoning["ref"] == ref
    assert output["finish_reason"] == "tool_call"
    call = next(p for p in rest if p["type"] == "tool_call")
    assert call == {"type": "tool_call", "name": "get_weather", "id": use["toolUseId"], "arguments": use["input"]}

    sent = json.loads(two.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["parts"][0]["type"] == "reasoning" and sent[1]["parts"][0]["ref"] == ref  # by reference
    assert sent[2]["parts"] == [{"type": "tool_call_response", "id": use["toolUseId"], "response": "rain"}]
    signature = message["content"][0]["reasoningContent"]["reasoningText"]["signature"]
    assert find_leaks([CANARY, signature], spans=telemetry.spans, directories=[tmp_path / "journal"]) == []
