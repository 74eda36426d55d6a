"""Done-means: application -> ChainedSpanExporter -> rotel (a real collector hop) -> Arize Phoenix; the
``loom.reasoning.captured`` event with its reference/digest attributes is read back from Phoenix's REST
API, and the reasoning text (a canary) is nowhere in Phoenix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from loom_otel.core import MemoryReasoningStore, Reasoning, ReasoningConfig, ReasoningKind, Runtime
from loom_otel.core._calls._capture import capture
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.exporters.chain import ChainedSpanExporter
from tests.support.phoenix import PhoenixServer, get_json, wait_until

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PROJECT = "loom-e2e"
CANARY = "CANARY-phoenix-reasoning-5d1e"


def test_capture_event_reaches_phoenix_through_rotel_without_reasoning_text(
    tmp_path: Path, phoenix: PhoenixServer, rotel: str
) -> None:
    journal = Journal(tmp_path / "journal", durability="batch", checkpoint_key=None)
    runtime = Runtime.resolve(ReasoningConfig(store=MemoryReasoningStore(), journal=journal))
    exporter = ChainedSpanExporter(OTLPSpanExporter(endpoint=rotel, insecure=True), journal=journal)
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": PROJECT}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    with provider.get_tracer("e2e").start_as_current_span("chat m") as span:
        result = capture(
            runtime,
            span,
            [Reasoning(ReasoningKind.TEXT, "anthropic", text=CANARY, signature="sig")],
            provider="anthropic",
            request_model="m",
            response_model="m",
        )
    assert result is not None
    provider.shutdown()
    base = phoenix.base

    def captured_event() -> dict | None:
        body = get_json(f"{base}/v1/projects/{PROJECT}/spans?limit=100")
        for s in body["data"]:
            for event in s.get("events") or []:
                if event.get("name") == "loom.reasoning.captured":
                    return {"span": s, "event": event, "all": body}
        return None

    found = wait_until(captured_event, 120, "the captured event in Phoenix")
    attributes = found["event"]["attributes"]
    (part,) = result.parts
    assert attributes["loom.reasoning.part.digest"] == [part.digest]
    assert attributes["loom.reasoning.part.ref"] == [part.text_ref]
    assert attributes["loom.audit.seq"] == 1 and attributes["loom.audit.origin"] == journal.origin
    assert CANARY not in json.dumps(found["all"])  # not in any span, attribute or event Phoenix serves
    stored = [p for p in (phoenix.home / "phoenix").rglob("*") if p.is_file()]
    assert stored and not any(CANARY.encode() in p.read_bytes() for p in stored)  # nor in its database
