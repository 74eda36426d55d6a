"""Redact mode under a framework that drops empty reasoning blocks: the Converse answer the application is
handed carries ``WITHHELD`` in each reasoning text (a stream's first delta of a block carries it), so the
block survives the filter and is replaced by the stored text on the way out. Zero code (no
``execution()``), converse and converse_stream, the strict simulator checking every signed text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.core.vendor_helpers import WITHHELD
from loom_otel.instrumentation.bedrock import BedrockInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.bedrock.helpers import CANARY, MODES, THOUGHT, request, tool_loop


@pytest.fixture
def sim() -> Simulator:
    return Simulator(strict=True, reasoning_text=THOUGHT, stream_chunks=4, max_tool_rounds=2)


def _filtered(message: dict[str, Any]) -> dict[str, Any]:
    """The assistant turn as a framework that keeps a reasoning block only when its text is non-empty."""
    kept = [
        b
        for b in message["content"]
        if not ("reasoningText" in b.get("reasoningContent", {}) and not b["reasoningContent"]["reasoningText"]["text"])
    ]
    return {"role": "assistant", "content": kept}


@pytest.mark.parametrize("mode", list(MODES))
def test_a_framework_that_drops_empty_reasoning_blocks_keeps_working_in_redact_mode(mode, sim, client, tmp_path: Path):
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact")
    with instrumented(BedrockInstrumentor(), config=config) as telemetry:
        history, answers = tool_loop(client, mode, as_sent=_filtered)

    assert [a["stopReason"] for a in answers] == ["tool_use", "tool_use", "end_turn"]  # strict: all accepted
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    held = [
        b["reasoningContent"]["reasoningText"]["text"]
        for a in answers
        for b in a["output"]["message"]["content"]
        if "reasoningText" in b.get("reasoningContent", {})
    ]
    assert len(held) == 3 and set(held) == {WITHHELD}  # the application holds the placeholder, never the text
    # The vendor got the text it signed back in every assistant turn, never the placeholder.
    for sent in sim.requests[1:]:
        texts = [
            b["reasoningContent"]["reasoningText"]["text"]
            for m in sent.body["messages"]
            if m["role"] == "assistant"
            for b in m["content"]
            if "reasoningText" in b.get("reasoningContent", {})
        ]
        assert texts and all(CANARY in t and WITHHELD not in t for t in texts)
    visible = [json.dumps(history, default=str), json.dumps(answers, default=str)]
    assert find_leaks([CANARY], texts=visible, spans=telemetry.spans, directories=[tmp_path / "journal"]) == []


def test_the_placeholder_left_in_a_block_is_refused_bare(sim, client, tmp_path: Path):
    """Without loom-otel to replace it, the placeholder is a modified text: the strict vendor refuses it."""
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", transcript="redact")
    with instrumented(BedrockInstrumentor(), config=config):
        first = client.converse(**request(tools=True))
    message = first["output"]["message"]
    assert message["content"][0]["reasoningContent"]["reasoningText"]["text"] == WITHHELD
    (use,) = [b["toolUse"] for b in message["content"] if "toolUse" in b]
    result = {"role": "user", "content": [{"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": "r"}]}}]}
    with pytest.raises(ClientError, match="ValidationException"):
        client.converse(**request(tools=True, messages=[*request()["messages"], message, result]))
