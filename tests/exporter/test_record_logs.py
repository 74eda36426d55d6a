"""Records no sampled call's trace can hold (checkpoints, tombstones, captures of unsampled calls) travel
as OTLP log records, not as root spans that tracing views list as traces; nothing lost, nothing twice;
the archive (OTLP JSON of both signals) verifies; a downstream that refuses logs gets them as spans."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToJson
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from loom_otel.audit import verify
from loom_otel.core._evidence._journal._records import RECORD_SPAN, record_from_event
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.exporters.chain import ChainedSpanExporter
from loom_otel.exporters.chain._logs import logs_from_environment
from loom_otel.testing import find_leaks
from tests.support.journaled import CANARY

from .test_exporter import delivered, journal_records


class FlakyLogs(InMemoryLogRecordExporter):
    """Fails the first ``failures`` exports (``None``: every one)."""

    def __init__(self, failures: int | None = 0) -> None:
        super().__init__()
        self.failures, self.calls = failures, 0

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        self.calls += 1
        if self.failures is None or self.calls <= self.failures:
            return LogRecordExportResult.FAILURE
        return super().export(batch)


def logged(exporter: InMemoryLogRecordExporter) -> list[dict]:
    found = []
    for log in exporter.get_finished_logs():
        record = log.log_record
        rebuilt = record_from_event(str(record.event_name), dict(record.attributes or {}), int(record.timestamp or 0))
        assert rebuilt is not None and record.body == record.event_name
        found.append(rebuilt)
    return found


def run(journal: Journal, do_capture, inner: InMemorySpanExporter, logs: InMemoryLogRecordExporter) -> None:
    exporter = ChainedSpanExporter(inner, journal=journal, logs=logs, sweep_interval=0.05)
    sampled = TracerProvider()
    sampled.add_span_processor(SimpleSpanProcessor(exporter))
    unsampled = TracerProvider(sampler=ALWAYS_OFF)
    unsampled.add_span_processor(SimpleSpanProcessor(exporter))
    for _ in range(12):  # checkpoint_every=10: a checkpoint in the middle, another at shutdown
        do_capture(sampled)
    do_capture(unsampled)  # no span reaches the exporter: its record has no trace to join
    sampled.shutdown()
    unsampled.shutdown()


def test_records_without_a_sampled_call_travel_as_log_records_once(journal: Journal, do_capture) -> None:
    inner, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    run(journal, do_capture, inner, logs)
    want = journal_records(journal.directory)
    as_logs = logged(logs)
    assert {r["type"] for r in as_logs} == {"checkpoint", "capture"}  # checkpoints and the unsampled capture
    assert sum(1 for r in as_logs if r["type"] == "capture") == 1
    assert not any(s.name == RECORD_SPAN and s.parent is None for s in inner.get_finished_spans())  # no root
    by_key = {(r["origin"], r["seq"]): r for r in as_logs}
    assert len(by_key) == len(as_logs)  # none twice
    assert set(by_key).isdisjoint(delivered(inner))
    assert {**delivered(inner), **by_key} == want  # none lost, each rebuilt exactly
    texts = [log.to_json() for log in logs.get_finished_logs()]
    assert find_leaks([CANARY], spans=inner.get_finished_spans(), texts=texts) == []


def test_failed_log_exports_are_retried_until_delivered(journal: Journal, do_capture) -> None:
    logs = FlakyLogs(failures=3)
    inner_fails_too = _RefusingSpans()  # root spans refused too: no fallback, a retry of the logs
    exporter = ChainedSpanExporter(inner_fails_too, journal=journal, logs=logs, sweep_interval=0.05)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for _ in range(3):
        do_capture(provider)
    journal.checkpoint()
    assert exporter.force_flush(20_000)
    checkpoints = [r for r in logged(logs) if r["type"] == "checkpoint"]
    assert checkpoints and logs.calls > 3
    assert not any(s.name == RECORD_SPAN and s.parent is None for s in inner_fails_too.get_finished_spans())
    provider.shutdown()


class _RefusingSpans(InMemorySpanExporter):
    """Refuses resent root spans (as a collector that is down would): the log path must deliver them."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if any(s.name == RECORD_SPAN and s.parent is None for s in spans):
            return SpanExportResult.FAILURE
        return super().export(spans)


def test_a_downstream_refusing_logs_gets_them_as_spans(journal: Journal, do_capture, caplog) -> None:
    inner, logs = InMemorySpanExporter(), FlakyLogs(failures=None)
    with caplog.at_level(logging.WARNING):
        run(journal, do_capture, inner, logs)
    assert delivered(inner) == journal_records(journal.directory)  # nothing lost
    assert logs.get_finished_logs() == ()
    warnings = [r.getMessage() for r in caplog.records if "refuses OTLP log records" in r.getMessage()]
    assert len(warnings) == 1  # said once, then spans only
    assert logs.calls == 1
    assert "'default-audit'" in warnings[0]
    records = [s for s in inner.get_finished_spans() if s.name == RECORD_SPAN]
    roots = [s for s in records if s.parent is None]
    assert {s.attributes["loom.audit.type"] for s in roots} >= {"checkpoint"}
    # Filed under a project of their own in Phoenix (``openinference.project.name``), never among the calls.
    assert {s.resource.attributes.get("openinference.project.name") for s in roots} == {"default-audit"}
    assert {s.resource.attributes.get("openinference.project.name") for s in records if s.parent} <= {None}


def test_the_default_log_exporter_matches_the_inner_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogs

    assert isinstance(logs_from_environment(), HttpLogs)
    monkeypatch.setenv("LOOM_OTEL_CHAIN_INNER", "otlp_proto_grpc")
    assert isinstance(logs_from_environment(), GrpcLogs)
    assert logs_from_environment("none") is None and logs_from_environment("zipkin_json") is None


def archive_of(path: Path, inner: InMemorySpanExporter, logs: InMemoryLogRecordExporter) -> Path:
    """What the collector's ``file`` exporter writes for these spans and log records: one OTLP JSON
    request per line, traces and logs in one file."""
    lines = [MessageToJson(encode_spans(inner.get_finished_spans()), indent=None).replace("\n", "")]
    lines.append(MessageToJson(encode_logs(list(logs.get_finished_logs())), indent=None).replace("\n", ""))
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_an_archive_of_spans_and_log_records_verifies_against_the_journal(
    journal: Journal, do_capture, tmp_path: Path
) -> None:
    inner, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    run(journal, do_capture, inner, logs)
    archive = archive_of(tmp_path / "spans.jsonl", inner, logs)
    (origin,) = verify(archive).origins
    (written,) = verify(journal.directory).origins
    assert origin.records == written.records and origin.gaps == () and origin.unanchored is None
    assert origin.duplicates_identical == 0
    report = verify(journal.directory, against=archive)
    assert report.ok, report


def test_tombstones_and_captures_are_read_from_log_records_in_the_archive(
    journal: Journal, do_capture, tmp_path: Path
) -> None:
    """A tombstone (an erasure record) and a capture of an unsampled call travel as log records; the
    archive's readers (``iter_tombstones``, ``iter_captures``) find them there."""
    from loom_otel.audit._captures import iter_captures
    from loom_otel.audit._tombstones import iter_tombstones, tombstone_attributes

    journal.append("erasure", tombstone_attributes(None, "exec-gone", scope="execution", by="test", reason="request"))
    inner, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    run(journal, do_capture, inner, logs)
    assert "erasure" in {r["type"] for r in logged(logs)}
    archive = archive_of(tmp_path / "spans.jsonl", inner, logs)
    (tombstone,) = iter_tombstones(archive)
    assert tombstone.execution_id == "exec-gone"
    assert len(list(iter_captures(archive))) == 13  # 12 on their calls' spans, the unsampled one as a log record


def test_logs_go_only_to_the_collector_the_spans_go_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Built from the environment: traces sent to a collector of their own while logs are left at the
    default endpoint (nothing may listen there) keep the old shape, root spans, instead of owing records
    to an endpoint nobody configured."""
    monkeypatch.setenv("LOOM_OTEL_CHAIN_INNER", "otlp_proto_http")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4999")
    same = ChainedSpanExporter(journal=tmp_path / "a")
    assert same._logs is not None  # the same collector: logs beside the spans
    same.shutdown()
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector.example:4318/v1/traces")
    apart = ChainedSpanExporter(journal=tmp_path / "b")
    assert apart._logs is None
    apart.shutdown()
