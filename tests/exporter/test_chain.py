"""The chained exporter's inner exporter from any registered ``opentelemetry_traces_exporter`` entry
point, and ``loom.audit.record`` spans a backend shows sensibly."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

from loom_otel.core.exceptions import ReasoningConfigError
from loom_otel.exporters.chain import ChainedSpanExporter
from loom_otel.exporters.chain._inner import inner_choices
from loom_otel.exporters.chain._spans import RecordSpans


class RecordingExporter(SpanExporter):
    """A third-party span exporter, registered through a real distribution's entry points."""

    exported: ClassVar[list[str]] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        RecordingExporter.exported.extend(s.name for s in spans)
        return SpanExportResult.SUCCESS


@pytest.fixture
def registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A distribution on ``sys.path`` whose entry points register ``RecordingExporter``."""
    info = tmp_path / "site" / "recording_exporter-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: recording-exporter\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[opentelemetry_traces_exporter]\nrecording_test = tests.exporter.test_chain:RecordingExporter\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    RecordingExporter.exported.clear()
    return "recording_test"


def test_forwards_to_any_registered_exporter(registered, monkeypatch, tmp_path):
    assert registered in inner_choices() and "loom_chain" not in inner_choices()
    monkeypatch.setenv("LOOM_OTEL_CHAIN_INNER", registered)
    exporter = ChainedSpanExporter(journal=tmp_path / "journal")
    assert isinstance(exporter.inner, RecordingExporter)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.get_tracer("t").start_span("work").end()
    provider.shutdown()
    assert "work" in RecordingExporter.exported


@pytest.mark.parametrize("value", ["loom_chain", "banana"])
def test_an_inner_exporter_nothing_registers_is_a_config_error(value, monkeypatch, tmp_path):
    monkeypatch.setenv("LOOM_OTEL_CHAIN_INNER", value)
    with pytest.raises(ReasoningConfigError) as raised:
        ChainedSpanExporter(journal=tmp_path / "journal")
    message = str(raised.value)
    assert f"LOOM_OTEL_CHAIN_INNER={value!r}" in message  # the variable and the value
    assert "otlp_proto_http, " in message and message.endswith(", none")  # what is allowed
    assert "loom_chain," not in message  # never its own inner exporter


def _record(seq: int, **extra: object) -> dict[str, object]:
    return {
        "type": "capture",
        "origin": "o1",
        "seq": seq,
        "prev": "0" * 64,
        "hash": "1" * 64,
        "time": time.time_ns(),
        "attributes": {"loom.execution.id": "exec-7", "loom.step.id": "s", **extra},
    }


def test_record_spans_join_their_sampled_call():
    trace_id, span_id = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    sampled = _record(1, **{"loom.call.trace_id": trace_id, "loom.call.span_id": span_id, "loom.call.sampled": True})
    unsampled = _record(2, **{"loom.call.trace_id": trace_id, "loom.call.span_id": span_id, "loom.call.sampled": False})
    joined, root = RecordSpans().build([sampled, unsampled])
    for span in (joined, root):
        assert span.name == "loom.audit.record" and span.kind is SpanKind.INTERNAL
        assert span.attributes["openinference.span.kind"] == "CHAIN"
        assert span.attributes["loom.execution.id"] == "exec-7"
    assert format(joined.context.trace_id, "032x") == trace_id
    assert joined.parent is not None and format(joined.parent.span_id, "016x") == span_id
    assert root.parent is None and format(root.context.trace_id, "032x") != trace_id


def test_forward_names_an_unknown_inner_exporter_as_a_usage_error(tmp_path):
    env = {**os.environ, "LOOM_OTEL_CHAIN_INNER": "banana", "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "loom_otel.cli", "forward", str(tmp_path / "journal")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("loom-otel forward: LOOM_OTEL_CHAIN_INNER='banana' names no registered span exporter")
    assert not (tmp_path / "journal").exists()
