"""An attribute value length limit below the journal's values cuts capture events short: the chained
exporter does not take a cut event as delivered, and sends its record again, whole, from the journal;
loom-otel warns at startup when the limit is that low."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loom_otel.core import LoomOtelWarning, MemoryReasoningStore, Reasoning, ReasoningConfig, ReasoningKind, Runtime
from loom_otel.core._calls import _limits
from loom_otel.core._calls._capture import capture
from loom_otel.core._evidence._journal import _writer as _journal
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._evidence._journal._records import RECORD_SPAN, record_from_event
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.exporters.chain import ChainedSpanExporter
from tests.support.journaled import CANARY

LONG_ORIGIN = "a-host-name-long-enough-to-be-cut-4242-0123456789ab"


def intact_copies(inner: InMemorySpanExporter) -> list[dict]:
    """Every record an exported event carries, as rebuilt (cut ones included, as they arrived)."""
    found = []
    for span in inner.get_finished_spans():
        for event in span.events:
            record = record_from_event(event.name, dict(event.attributes or {}), event.timestamp)
            if record is not None:
                found.append(record)
    return found


@pytest.fixture(autouse=True)
def _fresh_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "_warned", False)
    monkeypatch.delenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", raising=False)
    monkeypatch.delenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", raising=False)


@pytest.mark.parametrize("origin", ["short", "long"])
def test_cut_capture_events_reach_the_downstream_whole(
    journal_dir: Path, monkeypatch: pytest.MonkeyPatch, origin: str
) -> None:
    if origin == "long":  # the origin itself is cut: the record is found under the origin it starts
        monkeypatch.setattr(_journal, "_new_origin", lambda: LONG_ORIGIN)
    journal = Journal(journal_dir, durability="os", checkpoint_key=None, checkpoint_interval=0)
    assert (journal.origin == LONG_ORIGIN) is (origin == "long")
    runtime = Runtime.resolve(ReasoningConfig(store=MemoryReasoningStore(), journal=journal))
    inner = InMemorySpanExporter()
    exporter = ChainedSpanExporter(inner, journal=journal, resend_after=3600)  # no grace-period resend
    provider = TracerProvider(span_limits=SpanLimits(max_attribute_length=40))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for _ in range(5):
        with provider.get_tracer("test").start_as_current_span("chat m") as span:
            reasoning = Reasoning(ReasoningKind.TEXT, "anthropic", text=CANARY, signature="sig")
            capture(runtime, span, [reasoning], provider="anthropic", request_model="m", response_model="m")

    want = list(iter_records(journal_dir))
    assert [r["type"] for r in want] == ["capture"] * 5
    deadline = time.monotonic() + 10  # the sweeper resends at once (no flush, no grace period)
    while not all(record in intact_copies(inner) for record in want) and time.monotonic() < deadline:
        time.sleep(0.02)
    arrived = intact_copies(inner)
    assert all(record in arrived for record in want), "a journal record never reached the downstream whole"
    cut = [r for r in arrived if r not in want]
    assert len(cut) == 5  # the span pipeline's copies, cut at 40 characters
    assert CANARY not in repr([s.to_json() for s in inner.get_finished_spans()])
    exporter.shutdown()
    provider.shutdown()
    journal.close()


def test_whole_events_are_not_sent_twice(journal: Journal, do_capture) -> None:
    inner = InMemorySpanExporter()
    exporter = ChainedSpanExporter(inner, journal=journal, resend_after=3600)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for _ in range(5):
        do_capture(provider)
    assert exporter.force_flush(10_000)
    resent = [s for s in inner.get_finished_spans() if s.name == RECORD_SPAN]
    assert {str(s.attributes["loom.audit.type"]) for s in resent if s.attributes} <= {"checkpoint"}
    assert intact_copies(inner) == list(iter_records(journal.directory))
    exporter.shutdown()
    provider.shutdown()


def test_a_low_limit_warns_once_at_startup(monkeypatch: pytest.MonkeyPatch, journal_dir: Path) -> None:
    assert _limits.attribute_length_limit(TracerProvider()) is None
    assert not _limits.warn_if_truncating(TracerProvider(span_limits=SpanLimits(max_attribute_length=97)))
    with pytest.warns(LoomOtelWarning, match=r"limit \(40;.*below 97"):
        assert _limits.warn_if_truncating(TracerProvider(span_limits=SpanLimits(max_attribute_length=40)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _limits.warn_if_truncating(TracerProvider(span_limits=SpanLimits(max_attribute_length=40)))  # once

    monkeypatch.setattr(_limits, "_warned", False)
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "64")
    assert _limits.attribute_length_limit(object()) == 64  # not an SDK provider: the environment decides
    with pytest.warns(LoomOtelWarning, match=r"limit \(64;"):
        ChainedSpanExporter(InMemorySpanExporter(), journal=journal_dir).shutdown()
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "not a number")
    assert not _limits.warn_if_truncating(object())
