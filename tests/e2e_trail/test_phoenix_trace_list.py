"""Issue 46: nothing in a tracing backend's trace list that is not a call. An application's run (periodic
checkpoints, the checkpoint of its shutdown) and a later ``erase`` (its tombstone forwarded by the next
process) go through the chained exporter to rotel, a real collector hop, in front of Arize Phoenix:
checkpoints and tombstones travel as OTLP log records, so Phoenix lists exactly the traces that hold a
model call, while every record still reached the collector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

from loom_otel.audit import erase_execution
from loom_otel.core import MemoryReasoningStore, Reasoning, ReasoningConfig, ReasoningKind, Runtime, execution
from loom_otel.core._calls._capture import capture
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.exporters.chain import ChainedSpanExporter
from tests.support.phoenix import PhoenixServer, get_json, wait_until

pytestmark = pytest.mark.slow
PROJECT = "loom-trace-list"
CANARY = "CANARY-trace-list-6c2e"
RUNS = ("run-1", "run-2", "run-3")


def chained(journal: Journal | Path, endpoint: str) -> ChainedSpanExporter:
    return ChainedSpanExporter(
        OTLPSpanExporter(endpoint=endpoint, insecure=True),
        journal=journal,
        logs=OTLPLogExporter(endpoint=endpoint, insecure=True),
    )


def test_phoenix_lists_only_call_traces_after_checkpoints_and_an_erasure(
    tmp_path: Path, phoenix: PhoenixServer, rotel: str
) -> None:
    journal_dir = tmp_path / "journal"
    store = MemoryReasoningStore()
    journal = Journal(journal_dir, durability="batch", checkpoint_key=None, checkpoint_every=2)
    runtime = Runtime.resolve(ReasoningConfig(store=store, journal=journal))
    resource = Resource.create({"openinference.project.name": PROJECT})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(chained(journal, rotel)))
    calls = set()
    for run in RUNS:
        with execution(run), provider.get_tracer("app").start_as_current_span("chat m") as span:
            calls.add(format(span.get_span_context().trace_id, "032x"))
            found = capture(
                runtime,
                span,
                [Reasoning(ReasoningKind.TEXT, "anthropic", text=CANARY, signature="sig")],
                provider="anthropic",
                request_model="m",
                response_model="m",
            )
            assert found is not None
    provider.shutdown()  # its checkpoint, and what is owed, delivered
    journal.close()

    eraser = Journal(journal_dir, durability="always", checkpoint_key=None)
    erase_execution(store, None, "run-1", journal=eraser)  # the tombstone, in a chain of its own
    eraser.close()
    later = chained(journal_dir, rotel)  # the next process forwards the eraser's dead chain
    assert later.forward(timeout_millis=60_000)
    later.shutdown()
    types = [r["type"] for r in iter_records(journal_dir)]
    assert types.count("checkpoint") >= 2 and types.count("erasure") == 1 and types.count("capture") == 3

    sentinel = TracerProvider(resource=resource)  # sent last through the same hop: once it is listed,
    sentinel.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=rotel, insecure=True)))
    sentinel.get_tracer("test").start_span("sentinel").end()  # all that came before it is too
    sentinel.shutdown()

    def listed() -> list[dict] | None:
        spans = get_json(f"{phoenix.base}/v1/projects/{PROJECT}/spans?limit=1000")["data"]
        names = {s["name"] for s in spans}
        return spans if "sentinel" in names and sum(1 for s in spans if s["name"] == "chat m") == 3 else None

    spans = wait_until(listed, 120, "the calls and the sentinel in Phoenix")
    traces = {s["context"]["trace_id"] for s in spans if s["name"] != "sentinel"}
    assert traces == calls  # exactly the traces that hold a model call
    assert {s["name"] for s in spans} == {"chat m", "sentinel"}  # no loom.audit.record span, root or not
    assert CANARY not in json.dumps(spans)


def test_phoenix_with_no_collector_in_front_gets_them_as_spans_after_one_warning(
    tmp_path: Path, phoenix: PhoenixServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Phoenix takes no OTLP logs (405): sent to it directly, checkpoints and tombstones are not lost,
    they arrive as root ``loom.audit.record`` spans filed under the project ``<project>-audit``, never in
    the application's own project, and one warning says why and what to do."""
    project = "loom-no-collector"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.base)
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    monkeypatch.delenv("LOOM_OTEL_CHAIN_INNER", raising=False)
    journal = Journal(tmp_path / "journal", durability="batch", checkpoint_key=None)
    journal.append("erasure", {"loom.execution.id": "run-gone", "loom.erasure.scope": "execution"})
    journal.checkpoint()
    journal.close()
    exporter = ChainedSpanExporter(journal=tmp_path / "journal")  # OTLP/HTTP, logs beside: from the environment
    with caplog.at_level("WARNING"):
        assert exporter.forward(timeout_millis=60_000)
    exporter.shutdown()
    warned = [r.getMessage() for r in caplog.records if "refuses OTLP log records" in r.getMessage()]
    assert len(warned) == 1 and phoenix.base in warned[0] and f"'{project}-audit'" in warned[0]

    def records() -> set[str] | None:
        spans = get_json(f"{phoenix.base}/v1/projects/{project}-audit/spans?limit=100")["data"]
        found = {s["attributes"].get("loom.audit.type") for s in spans if s["name"] == "loom.audit.record"}
        return found if {"erasure", "checkpoint"} <= found else None

    wait_until(records, 120, "the records as spans in Phoenix's audit project")
    names = [p["name"] for p in get_json(f"{phoenix.base}/v1/projects")["data"]]
    assert project not in names  # nothing was filed under the application's project: no trace there
