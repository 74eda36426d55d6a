"""``verify`` of an untampered pipeline run under an attribute length limit (issue 27, point 5): the
span pipeline's copies of capture records are cut at 40 characters, the chained exporter resends each
whole; a cut copy whose whole copy verifies is reported as cut, not as a conflicting duplicate, and the
archive agrees with its journal. A copy that is not a mere cut of the whole one is still tampering."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from loom_otel.audit import verify
from loom_otel.audit._verify import _cut_of
from loom_otel.cli.__main__ import build_parser
from loom_otel.core import MemoryReasoningStore, Reasoning, ReasoningConfig, ReasoningKind, Runtime
from loom_otel.core._calls import _limits
from loom_otel.core._calls._capture import capture
from loom_otel.core._evidence._journal import _writer as _journal
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.exporters.chain import ChainedSpanExporter
from loom_otel.testing import OtlpJsonFileExporter
from tests.support.journaled import CANARY

LONG_ORIGIN = "a-host-name-long-enough-to-be-cut-4242-0123456789ab"
CALLS = 5


def _pipeline(journal_dir: Path, archive: Path) -> None:
    journal = Journal(journal_dir, durability="os", checkpoint_key=None, checkpoint_interval=0)
    runtime = Runtime.resolve(ReasoningConfig(store=MemoryReasoningStore(), journal=journal))
    exporter = ChainedSpanExporter(OtlpJsonFileExporter(archive), journal=journal, resend_after=3600)
    provider = TracerProvider(span_limits=SpanLimits(max_attribute_length=40))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for _ in range(CALLS):
        with provider.get_tracer("test").start_as_current_span("chat m") as span:
            reasoning = Reasoning(ReasoningKind.TEXT, "anthropic", text=CANARY, signature="sig")
            capture(runtime, span, [reasoning], provider="anthropic", request_model="m", response_model="m")
    journal.checkpoint()
    assert exporter.forward(timeout_millis=10_000)  # the cut records, resent whole from the journal
    provider.shutdown()
    journal.close()


@pytest.fixture(autouse=True)
def _quiet_limit_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_limits, "_warned", True)


@pytest.mark.parametrize("origin", ["short", "long"])
def test_an_untampered_run_under_a_length_limit_verifies_with_its_cut_copies_named(
    journal_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, origin: str
) -> None:
    if origin == "long":  # the origin's name is cut too
        monkeypatch.setattr(_journal, "_new_origin", lambda: LONG_ORIGIN)
    archive = tmp_path / "archive" / "traces.jsonl"
    archive.parent.mkdir()
    _pipeline(journal_dir, archive)
    assert CANARY not in archive.read_text()

    report = verify(archive)
    assert report.ok, report.problems
    (chain,) = report.origins
    assert chain.duplicates_cut == CALLS and chain.duplicates_conflicting == () and chain.modified == ()
    assert chain.records == CALLS + 1  # the captures and the checkpoint
    crossed = verify(journal_dir, against=archive)
    assert crossed.ok, crossed.problems
    assert crossed.witness is not None and crossed.witness.differing == ()
    archived = verify(archive, against=journal_dir)
    assert archived.ok, archived.problems

    args = build_parser().parse_args(["verify", str(archive)])
    out = io.StringIO()
    assert args.func(args, out=out, err=io.StringIO()) == 0
    assert f"{CALLS} copies cut short by an attribute length limit" in out.getvalue()


def test_a_cut_copy_that_says_something_else_is_still_a_conflict(journal_dir: Path, tmp_path: Path) -> None:
    archive = tmp_path / "traces.jsonl"
    _pipeline(journal_dir, archive)
    lines = archive.read_text().splitlines()
    # change one character inside a cut copy (an event on a "chat m" span): no longer a prefix of the whole
    changed = [line.replace('"stringValue": "anthropic"', '"stringValue": "anthrop1c"', 1) for line in lines]
    assert changed != lines
    archive.write_text("\n".join(changed) + "\n")
    report = verify(archive)
    assert not report.ok
    assert any("duplicates_conflicting" in p for p in report.problems), report.problems


def test_cut_of() -> None:
    whole = {"origin": "h-12", "seq": 3, "hash": "a" * 64, "attributes": {"k": ["abcdefgh", "ab"], "n": 5}}
    cut = {"origin": "h-12", "seq": 3, "hash": "a" * 6, "attributes": {"k": ["abcdef", "ab"], "n": 5}}
    assert _cut_of(cut, whole)
    assert not _cut_of(whole, whole)  # nothing cut: an identical copy, not a cut one
    assert not _cut_of({**cut, "seq": 4}, whole)  # a number changed
    assert not _cut_of({**cut, "attributes": {"k": ["abcdef", "ab"]}}, whole)  # a key dropped
    assert not _cut_of({**cut, "attributes": {"k": ["abcde", "ab"], "n": 5}}, whole)  # cut to two lengths
    assert not _cut_of({**cut, "attributes": {"k": ["abcdeX", "ab"], "n": 5}}, whole)  # changed, not cut
    assert not _cut_of(json.loads(json.dumps({**cut, "hash": "b" * 6})), whole)
