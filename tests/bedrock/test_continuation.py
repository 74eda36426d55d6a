"""A Bedrock Converse agent loop keeps its reasoning: signatures threaded, the drop rule on edited history,
redact mode, against the strict simulator (which refuses what Bedrock refuses), converse and converse_stream."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from loom_otel.core import LoomOtelWarning, MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.core.vendor_helpers import WITHHELD
from loom_otel.instrumentation.bedrock import BedrockInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.bedrock import helpers
from tests.bedrock.helpers import CANARY, MODES, THOUGHT, request, tool_loop

DROPPED = "loom.reasoning.dropped"


@pytest.fixture
def sim() -> Simulator:
    return Simulator(strict=True, reasoning_text=THOUGHT, stream_chunks=4, max_tool_rounds=2)


def _reasoning_texts(sim: Simulator) -> list[list[str]]:
    """Per request, the reasoning texts of the assistant turns the vendor received."""
    return [
        [
            b["reasoningContent"]["reasoningText"]["text"]
            for m in r.body["messages"]
            if m["role"] == "assistant"
            for b in m["content"]
            if "reasoningText" in b.get("reasoningContent", {})
        ]
        for r in sim.requests
    ]


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", list(MODES))
def test_tool_loop_threads_every_signature(mode, transcript, sim, client, tmp_path: Path):
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript=transcript)
    with instrumented(BedrockInstrumentor(), config=config) as telemetry, execution("run-1"):
        history, answers = tool_loop(client, mode)

    assert [a["stopReason"] for a in answers] == ["tool_use", "tool_use", "end_turn"]  # strict: all accepted
    assert reasoning_events(telemetry.spans, DROPPED) == []
    sent = _reasoning_texts(sim)
    assert sent[0] == [] and all(texts and all(CANARY in t for t in texts) for texts in sent[1:])
    signatures = [
        b["reasoningContent"]["reasoningText"]["signature"]
        for a in answers
        for b in a["output"]["message"]["content"]
        if "reasoningContent" in b
    ]
    assert len(signatures) == 3 and all(signatures)
    held = json.dumps(history, default=str) + json.dumps(answers, default=str)
    assert (CANARY in held) is (transcript == "keep")  # redact: the application never holds the text
    leaks = find_leaks([CANARY, *signatures], spans=telemetry.spans, directories=[tmp_path / "journal"])
    assert leaks == []


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", list(MODES))
def test_edited_history_drops_the_stale_blocks(mode, transcript, sim, client, tmp_path: Path):
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript=transcript)
    with instrumented(BedrockInstrumentor(), config=config) as telemetry, execution("run-1"):
        history, _ = tool_loop(client, mode)
        edited = [{"role": "user", "content": [{"text": "Should I pack an umbrella for Lyon?"}]}, *history[1:]]
        edited.append({"role": "user", "content": [{"text": "And on Saturday?"}]})
        answer = MODES[mode](client, request(tools=True, messages=edited))

    assert answer["stopReason"] in ("tool_use", "end_turn")  # the vendor accepted the request without the stale blocks
    last = [s for s in telemetry.spans if s.name.startswith("chat ")][-1]
    (event,) = reasoning_events([last], DROPPED)
    assert event["loom.reasoning.drop.reason"] == "prefix_changed"
    positions = ("messages.1.content.0", "messages.3.content.0", "messages.5.content.0")
    assert event["loom.reasoning.drop.positions"] == positions
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path / "journal"]) == []


def test_edited_history_is_refused_without_instrumentation(sim, client):
    """What the drop rule spares the application: the strict vendor refuses the stale signatures."""
    history, _ = tool_loop(client, "converse")
    edited = [{"role": "user", "content": [{"text": "Should I pack an umbrella for Lyon?"}]}, *history[1:]]
    edited.append({"role": "user", "content": [{"text": "And on Saturday?"}]})
    with pytest.raises(ClientError, match="ValidationException"):
        client.converse(**request(tools=True, messages=edited))


def test_a_direct_api_block_is_not_threaded_into_bedrock(sim, client, tmp_path: Path):
    """A signature recorded for the direct Anthropic API is never threaded into Bedrock (its own
    provider): its text is not put back, the block is dropped."""
    from loom_otel.instrumentation.anthropic import AnthropicInstrumentor

    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact")
    with instrumented(AnthropicInstrumentor(), BedrockInstrumentor(), config=config) as telemetry, execution("run-1"):
        direct = sim.anthropic_client().messages.create(
            model="claude-sonnet-4-5",
            max_tokens=4096,
            thinking={"type": "enabled", "budget_tokens": 2048},
            messages=[{"role": "user", "content": "What is the weather in Paris?"}],
        )
        (thinking,) = [b for b in direct.content if b.type == "thinking"]
        assert thinking.thinking == WITHHELD  # redact mode on the direct API
        block = {"reasoningContent": {"reasoningText": {"text": thinking.thinking, "signature": thinking.signature}}}
        messages = [
            *request()["messages"],
            {"role": "assistant", "content": [block, {"text": "Sunny."}]},
            {"role": "user", "content": [{"text": "And tomorrow?"}]},
        ]
        client.converse(**request(messages=messages))
    # The direct API's block is dropped, never put back with its text: Bedrock is its own provider.
    assert sim.requests[-1].body["messages"][1]["content"] == [{"text": "Sunny."}]
    (event,) = reasoning_events(telemetry.spans, DROPPED)
    assert event["loom.reasoning.drop.reason"] == "provider_changed"
    assert event["loom.reasoning.drop.positions"] == ("messages.1.content.0",)


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", list(MODES))
def test_a_tool_round_stripped_of_its_reasoning_gets_it_back(mode, transcript, sim, client, tmp_path: Path):
    """A framework that keeps only text and tool calls: Bedrock refuses a tool round whose assistant turn
    does not start with its thinking; the recorded block (text from the store) is put back."""
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript=transcript)
    question = request()["messages"]
    with instrumented(BedrockInstrumentor(), config=config) as telemetry, execution("run-1"):
        first = MODES[mode](client, request(tools=True))
        message = first["output"]["message"]
        stripped = {"role": "assistant", "content": [b for b in message["content"] if "reasoningContent" not in b]}
        (use,) = [b["toolUse"] for b in stripped["content"] if "toolUse" in b]
        result = {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": "rain"}]}}],
        }
        answer = MODES[mode](client, request(tools=True, messages=[*question, stripped, result]))

    assert answer["stopReason"] in ("tool_use", "end_turn")  # accepted
    sent = sim.requests[-1].body["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]
    assert CANARY in sent["text"]
    last = [s for s in telemetry.spans if s.name.startswith("chat ")][-1]
    (event,) = reasoning_events([last], "loom.reasoning.restored")
    assert event["loom.reasoning.restore.positions"] == ("messages.1.content.0",)
    assert find_leaks([CANARY, sent["signature"]], spans=telemetry.spans, directories=[tmp_path / "journal"]) == []
    with pytest.raises(ClientError, match="thinking"):  # bare, the vendor refuses it
        client.converse(**request(tools=True, messages=[*question, stripped, result]))


@pytest.mark.parametrize("mode", list(MODES))
def test_a_stripped_tool_round_outside_any_execution_is_warned_at_the_first_request(mode, sim, client, tmp_path: Path):
    """Zero code: the stripped round is not put back (no execution() to read its text from), Bedrock
    refuses the request, so the discard warning is given at that first request, naming the call site."""
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal")
    question = request()["messages"]
    with instrumented(BedrockInstrumentor(), config=config), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        message = MODES[mode](client, request(tools=True))["output"]["message"]
        stripped = {"role": "assistant", "content": [b for b in message["content"] if "reasoningContent" not in b]}
        (use,) = [b["toolUse"] for b in stripped["content"] if "toolUse" in b]
        result = {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": "r"}]}}],
        }
        assert caught == []
        with pytest.raises(ClientError, match="thinking"):
            MODES[mode](client, request(tools=True, messages=[*question, stripped, result]))
    (warning,) = [w for w in caught if "tool-use turn at message 1" in str(w.message)]
    assert warning.category is LoomOtelWarning and warning.filename == helpers.__file__  # the call site
    assert "'tests'" in str(warning.message)
    assert find_leaks([CANARY], texts=[str(w.message) for w in caught]) == []
