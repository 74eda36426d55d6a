from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loom_otel.core import ReasoningConfigError
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._evidence._journal._records import RECORD_SPAN, record_from_event
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.exporters.chain import ChainedSpanExporter
from loom_otel.exporters.chain._inner import NoneSpanExporter
from tests.support.journaled import CANARY


class Flaky(InMemorySpanExporter):
    """Fails the first ``failures`` exports, optionally raising."""

    def __init__(self, failures: int = 0, raises: bool = False) -> None:
        super().__init__()
        self.failures, self.raises, self.calls = failures, raises, 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls += 1
        if self.calls <= self.failures:
            if self.raises:
                raise RuntimeError("downstream exploded")
            return SpanExportResult.FAILURE
        return super().export(spans)


def delivered(exporter: InMemorySpanExporter) -> dict[tuple[str, int], dict]:
    found: dict[tuple[str, int], dict] = {}
    for span in exporter.get_finished_spans():
        for event in span.events:
            record = record_from_event(event.name, dict(event.attributes or {}), event.timestamp)
            if record is not None:
                found[(record["origin"], record["seq"])] = record
    return found


def journal_records(directory: Path) -> dict[tuple[str, int], dict]:
    return {(r["origin"], r["seq"]): r for r in iter_records(directory)}


def test_builds_with_no_arguments_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOM_OTEL_CHAIN_INNER", "none")
    monkeypatch.setenv("LOOM_OTEL_AUDIT_JOURNAL", str(tmp_path / "j"))
    (ep,) = entry_points(group="opentelemetry_traces_exporter", name="loom_chain")
    exporter = ep.load()()
    assert isinstance(exporter, ChainedSpanExporter)
    assert isinstance(exporter.inner, NoneSpanExporter)
    assert exporter.directory == tmp_path / "j"
    exporter.shutdown()


def test_bad_inner_name_is_a_config_error(monkeypatch: pytest.MonkeyPatch, journal_dir: Path) -> None:
    monkeypatch.setenv("LOOM_OTEL_CHAIN_INNER", "carrier-pigeon")
    with pytest.raises(
        ReasoningConfigError, match=r"LOOM_OTEL_CHAIN_INNER='carrier-pigeon'.*allowed: .*otlp_proto_http"
    ):
        ChainedSpanExporter(journal=journal_dir)


def test_dropped_spans_are_resent_from_the_journal(journal: Journal, do_capture) -> None:
    inner = InMemorySpanExporter()
    exporter = ChainedSpanExporter(inner, journal=journal)
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_queue_size=4, max_export_batch_size=2, schedule_delay_millis=1000)
    )
    for _ in range(200):
        do_capture(provider)
    provider.shutdown()
    got = delivered(inner)
    want = journal_records(journal.directory)
    assert len(want) > 200  # captures and checkpoints (one from shutdown)
    assert got == want  # every record, rebuilt exactly (hash fields included)
    assert any(s.name == RECORD_SPAN for s in inner.get_finished_spans())
    assert CANARY not in repr([s.to_json() for s in inner.get_finished_spans()])


@pytest.mark.parametrize("raises", [False, True])
def test_failed_and_raising_exports_are_retried(journal: Journal, do_capture, raises: bool) -> None:
    inner = Flaky(failures=5, raises=raises)
    exporter = ChainedSpanExporter(inner, journal=journal, sweep_interval=0.05)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for _ in range(8):
        do_capture(provider)
    assert exporter.force_flush(10_000)
    assert set(journal_records(journal.directory)) <= set(delivered(inner))
    provider.shutdown()


def test_records_whose_span_never_arrives_are_resent_after_the_grace(journal: Journal, do_capture) -> None:
    inner = InMemorySpanExporter()
    exporter = ChainedSpanExporter(inner, journal=journal, resend_after=0.2, sweep_interval=0.05)
    silent = TracerProvider()  # its spans go nowhere: as if the queue had dropped them
    for _ in range(5):
        do_capture(silent)
    assert exporter.export([]) is SpanExportResult.SUCCESS  # starts the sweeper
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(delivered(inner)) < 5:
        time.sleep(0.05)
    assert set(delivered(inner)) >= {(journal.origin, s) for s in range(1, 6)}
    exporter.shutdown()


def test_lifecycle_is_idempotent_and_never_raises(journal: Journal) -> None:
    exporter = ChainedSpanExporter(Flaky(failures=10**6, raises=True), journal=journal)
    assert exporter.export([]) is SpanExportResult.FAILURE
    exporter.shutdown(timeout_millis=100)
    exporter.shutdown(timeout_millis=100)
    assert exporter.export([]) is SpanExportResult.FAILURE
    assert exporter.force_flush() is False


CRASHER = """
import os, sys
from loom_otel.core._evidence._journal._writer import Journal
j = Journal(sys.argv[1], durability="always", checkpoint_key=None, checkpoint_every=7, checkpoint_interval=0)
for i in range(20):
    j.append("capture", {"i": i})
os._exit(0)  # no close, no final checkpoint: a crash
"""


def test_a_dead_process_leftovers_are_forwarded_once(journal_dir: Path) -> None:
    subprocess.run([sys.executable, "-c", CRASHER, str(journal_dir)], check=True)
    want = journal_records(journal_dir)
    inner = InMemorySpanExporter()
    exporter = ChainedSpanExporter(inner, journal=journal_dir)
    assert exporter.forward(timeout_millis=10_000)
    exporter.shutdown()
    assert delivered(inner) == want and len(want) == 22
    again = InMemorySpanExporter()
    second = ChainedSpanExporter(again, journal=journal_dir)  # the cursor says: all delivered
    assert second.forward(timeout_millis=10_000)
    second.shutdown()
    assert delivered(again) == {}


def test_cli_forward(journal_dir: Path, capsys) -> None:
    from loom_otel.cli.__main__ import main

    subprocess.run([sys.executable, "-c", CRASHER, str(journal_dir)], check=True)
    assert main(["forward", str(journal_dir), "--inner", "none"]) == 0
    assert "delivered" in capsys.readouterr().out
