"""Capture at the Bedrock Converse seam (boto3 ``_make_api_call``), in every call mode, over HTTP."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.instrumentation.bedrock import BedrockInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from tests.bedrock.helpers import CANARY, MODEL, MODES, request

SPAN = f"chat {MODEL}"


def _captures(journal_dir: Path) -> list[dict[str, Any]]:
    return [r for r in iter_records(journal_dir) if r.get("type") == "capture"]


def _thinking(answer: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = answer["output"]["message"]["content"]
    return [b["reasoningContent"]["reasoningText"] for b in blocks if "reasoningText" in b.get("reasoningContent", {})]


@pytest.mark.parametrize("mode", list(MODES))
def test_captures_reasoning_by_reference(mode, client, config, store, journal_dir, caplog):
    caplog.set_level(logging.DEBUG, logger="loom_otel")  # botocore logs bodies at DEBUG: not ours
    with instrumented(BedrockInstrumentor(), config=config) as telemetry:
        answer = MODES[mode](client, request())

    (thinking,) = _thinking(answer)
    assert CANARY in thinking["text"]  # keep mode: the application reads the vendor's answer
    (span,) = [s for s in telemetry.spans if s.name == SPAN]
    assert span.attributes["gen_ai.provider.name"] == "aws.bedrock"
    assert span.attributes["gen_ai.operation.name"] == "chat"
    assert span.attributes["gen_ai.request.model"] == MODEL
    assert span.attributes["gen_ai.request.stream"] is (mode == "stream")
    assert span.attributes["gen_ai.request.max_tokens"] == 4096
    assert span.attributes["gen_ai.request.temperature"] == 1.0
    assert span.attributes["server.address"] == "127.0.0.1"
    assert span.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert span.attributes["gen_ai.response.id"] == answer["ResponseMetadata"]["RequestId"]  # the AWS request id
    assert isinstance(span.attributes["gen_ai.usage.input_tokens"], int)
    assert isinstance(span.attributes["gen_ai.usage.output_tokens"], int)

    (event,) = reasoning_events([span])
    assert event["loom.reasoning.part.kind"] == ("summary",)  # Claude 4 and later summarise
    (ref,) = event["loom.reasoning.part.ref"]
    text = store.get(ref, tenant=None, execution_id=event["loom.execution.id"])
    assert text is not None and text.decode() == thinking["text"]
    (record,) = _captures(journal_dir)
    assert record["hash"] == event["loom.audit.hash"]

    leaks = find_leaks(
        [CANARY, thinking["signature"]], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text]
    )
    assert leaks == []


def test_redact_mode_warns_when_botocore_logs_bodies(store, journal_dir):
    """botocore writes request and response bodies at DEBUG, where loom-otel cannot reach them: redact mode
    says so once, naming the logger, as it does for the other SDKs."""
    from loom_otel.core import ReasoningConfig
    from loom_otel.core.exceptions import LoomOtelWarning

    logger = logging.getLogger("botocore")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        config = ReasoningConfig(store=store, journal=journal_dir, transcript="redact")
        with pytest.warns(LoomOtelWarning, match="botocore"), instrumented(BedrockInstrumentor(), config=config):
            pass
    finally:
        logger.setLevel(level)
