"""converse_stream's lifetimes (closed early, failing mid-way, never iterated), redacted reasoning, vendor
errors and the request guard, through real boto3 clients over the simulator's HTTP server."""

from __future__ import annotations

import gc
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from loom_otel.core import ReasoningConfigError, ReasoningKind
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.instrumentation.bedrock import BedrockInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.bedrock.helpers import CANARY, MODES, THOUGHT, request


def _captures(journal_dir: Path) -> list[dict[str, Any]]:
    return [r for r in iter_records(journal_dir) if r.get("type") == "capture"]


def test_stream_closed_early_keeps_what_the_app_received(client, config, store):
    with instrumented(BedrockInstrumentor(), config=config) as telemetry:
        stream = client.converse_stream(**request())["stream"]
        received = ""
        for event in stream:
            delta = event.get("contentBlockDelta", {}).get("delta", {})
            received += delta.get("reasoningContent", {}).get("text", "")
            if len(received) > 10:
                break
        stream.close()
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "closed_early"
    (event,) = reasoning_events([span])
    (ref,) = event["loom.reasoning.part.ref"]
    assert store.get(ref, tenant=None, execution_id=event["loom.execution.id"]).decode() == received
    assert received != THOUGHT


def test_stream_failing_midway_captures_nothing(sim, client, config, journal_dir):
    sim.break_stream_after(4)
    with instrumented(BedrockInstrumentor(), config=config) as telemetry:
        stream = client.converse_stream(**request())["stream"]
        with pytest.raises(Exception) as raised:
            for _ in stream:
                pass
    (span,) = telemetry.spans
    assert span.status.status_code.name == "ERROR"
    assert span.attributes["error.type"] == type(raised.value).__qualname__
    assert reasoning_events(telemetry.spans) == [] and _captures(journal_dir) == []
    assert CANARY not in str(raised.value)


def test_stream_never_iterated_ends_its_span(client, config, journal_dir):
    with instrumented(BedrockInstrumentor(), config=config) as telemetry:
        response = client.converse_stream(**request())
        del response
        gc.collect()
    (span,) = telemetry.spans
    assert span.attributes["loom.stream.outcome"] == "abandoned"
    assert _captures(journal_dir) == []


@pytest.mark.parametrize("mode", list(MODES))
def test_redacted_content_is_captured_as_redacted(mode, client, sim, config, store, journal_dir, caplog):
    caplog.set_level(logging.DEBUG, logger="loom_otel")
    sim.script = replace(sim.script, redacted=True)
    with instrumented(BedrockInstrumentor(), config=config) as telemetry:
        answer = MODES[mode](client, request())
    blocks = [b["reasoningContent"] for b in answer["output"]["message"]["content"] if "reasoningContent" in b]
    assert len(blocks) == 2 and isinstance(blocks[1]["redactedContent"], bytes)
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.kind"] == (ReasoningKind.SUMMARY.value, ReasoningKind.REDACTED.value)
    opaque = blocks[1]["redactedContent"].decode()
    leaks = find_leaks([CANARY, opaque], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text])
    assert leaks == []


def test_a_vendor_error_ends_the_span_and_is_reraised_unchanged(sim, client, config, journal_dir):
    sim.fail_next(400)
    with instrumented(BedrockInstrumentor(), config=config) as telemetry:
        with pytest.raises(ClientError, match="ValidationException"):
            client.converse(**request())
    (span,) = telemetry.spans
    assert span.status.status_code.name == "ERROR"
    assert span.attributes["error.type"] == "ValidationException"  # the class botocore raises
    assert _captures(journal_dir) == []


def test_the_guard_refuses_untrusted_text_in_the_system_prompt(sim, client, config):
    from loom_otel.core import Untrusted

    with instrumented(BedrockInstrumentor(), config=config):
        tainted = Untrusted(f"earlier reasoning {CANARY}", origin="llm-reasoning:s1")
        with pytest.raises(ReasoningConfigError, match=r"Bedrock Converse request refused") as refused:
            client.converse(**request(system=[{"text": tainted}]))
        assert CANARY not in str(refused.value)
        with pytest.raises(ReasoningConfigError, match=r"reasoningContent"):
            block = {"reasoningContent": {"reasoningText": {"text": "x", "signature": "s"}}}
            client.converse_stream(**request(messages=[{"role": "user", "content": [block]}]))
    assert sim.requests == []  # nothing reached the vendor


def test_other_operations_and_services_are_left_alone(client, config, sim: Simulator):
    with instrumented(BedrockInstrumentor(), config=config) as telemetry:
        with pytest.raises(ClientError):
            client.apply_guardrail(guardrailIdentifier="g", guardrailVersion="1", source="INPUT", content=[])
    assert telemetry.spans == ()
