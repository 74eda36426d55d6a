"""Every part status produced for real, in the file, memory and S3 stores, from all three sources."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from loom_otel.audit import PartStatus, ReasoningReading, erase_execution, read_reasoning
from loom_otel.core import ReasoningKind, Untrusted
from loom_otel.core._evidence._store._protocol import ReasoningStore
from tests.support.evidence import (
    SOURCES,
    Blobs,
    Recorder,
    make_recorder,
    omitted_display,
    redacted,
    source_of,
    summary,
    text,
)


def read(
    kind: str,
    recorder: Recorder,
    store: ReasoningStore,
    tmp_path: Path,
    *,
    execution_id: str,
    step_id: str | None = None,
) -> ReasoningReading:
    return read_reasoning(source_of(kind, recorder, tmp_path), store, execution_id=execution_id, step_id=step_id)


@pytest.mark.parametrize("source", SOURCES)
def test_ok_redacted_and_empty(source: str, recorder: Recorder, store: ReasoningStore, tmp_path: Path) -> None:
    recorder.call([text("first thought"), redacted(), omitted_display()], execution_id="run-1", step_id="plan")
    recorder.call([summary("a summary")], execution_id="run-1", step_id="act")
    recorder.call([text("someone else's")], execution_id="run-2", step_id="plan")

    reading = read(source, recorder, store, tmp_path, execution_id="run-1")

    assert [s.step_id for s in reading.steps] == ["plan", "act"]
    plan = reading.steps[0].received.parts
    assert [(p.kind, p.status) for p in plan] == [
        (ReasoningKind.TEXT, PartStatus.OK),
        (ReasoningKind.REDACTED, PartStatus.REDACTED),
        (ReasoningKind.TEXT, PartStatus.EMPTY),
    ]
    assert isinstance(plan[0].text, Untrusted)
    assert plan[0].text.text == "first thought"
    assert plan[0].text.origin == "llm-reasoning:plan"
    assert plan[0].digest == hashlib.sha256(b"first thought").hexdigest()
    assert plan[0].size == len("first thought")
    assert plan[1].text is None and plan[2].text is None
    act = reading.steps[1].received.parts[0]
    assert (act.kind, act.status, act.text) == (
        ReasoningKind.SUMMARY,
        PartStatus.OK,
        Untrusted("a summary", origin="llm-reasoning:act"),
    )
    assert reading.intact
    assert "first thought" not in repr(reading)


@pytest.mark.parametrize("source", SOURCES)
def test_erased(source: str, recorder: Recorder, store: ReasoningStore, tmp_path: Path) -> None:
    recorder.call([text("to be forgotten"), redacted()], execution_id="run-e", step_id="s")
    result = erase_execution(store, None, "run-e", journal=recorder.journal_dir, reason="gdpr-17")
    assert result.blobs_removed == 1
    assert erase_execution(store, None, "run-e", journal=recorder.journal_dir).blobs_removed == 0  # idempotent
    recorder.forward("erasure")  # the tombstones reach the collector and the spans as every record does
    recorder.forward("checkpoint")  # and the signed checkpoints that prove them

    reading = read(source, recorder, store, tmp_path, execution_id="run-e")

    parts = reading.parts
    assert [p.status for p in parts] == [PartStatus.ERASED, PartStatus.REDACTED]
    tombstone = parts[0].erasure
    assert tombstone is not None and result.tombstone is not None
    assert (tombstone.reason, tombstone.time, tombstone.scope) == ("gdpr-17", result.tombstone.time, "execution")
    assert tombstone.time >= reading.steps[0].attempts[0].time and tombstone.by
    assert parts[0].ref and parts[0].digest and parts[0].size == len("to be forgotten")  # the record keeps them
    assert parts[0].text is None


@pytest.mark.parametrize("where", ["body", "header"])
def test_flipped_byte_is_a_digest_mismatch(
    where: str, recorder: Recorder, store: ReasoningStore, blobs: Blobs, tmp_path: Path
) -> None:
    capture = recorder.call([text("tamper with me")], execution_id="run-t", step_id="s")
    ref = capture.parts[0].text_ref
    assert ref is not None
    if where == "body":
        blobs.flip_last_byte(ref)
    else:
        blobs.flip_header_byte(ref)

    reading = read("journal", recorder, store, tmp_path, execution_id="run-t")

    (part,) = reading.parts
    assert part.status is PartStatus.DIGEST_MISMATCH
    assert part.text is None
    assert not reading.intact


def test_blob_copied_from_another_execution(
    recorder: Recorder, store: ReasoningStore, blobs: Blobs, tmp_path: Path
) -> None:
    theirs = recorder.call([text("their reasoning")], execution_id="run-a", step_id="s")
    ours = recorder.call([text("our reasoning")], execution_id="run-b", step_id="s")
    assert theirs.parts[0].text_ref and ours.parts[0].text_ref
    blobs.copy(theirs.parts[0].text_ref, ours.parts[0].text_ref)

    reading = read("journal", recorder, store, tmp_path, execution_id="run-b")

    (part,) = reading.parts
    assert part.status is PartStatus.DIGEST_MISMATCH
    assert part.text is None  # never the other execution's text
    assert read("journal", recorder, store, tmp_path, execution_id="run-a").parts[0].status is PartStatus.OK


def test_identical_text_in_the_same_scope_reads_the_right_size(
    recorder: Recorder, store: ReasoningStore, tmp_path: Path
) -> None:
    recorder.call([text("same"), text("same")], execution_id="run-s", step_id="s")
    assert [p.status for p in read("journal", recorder, store, tmp_path, execution_id="run-s").parts] == [
        PartStatus.OK,
        PartStatus.OK,
    ]


def test_not_kept_when_capture_is_off(store: ReasoningStore, tmp_path: Path) -> None:
    recorder = make_recorder(store, tmp_path, capture=False)
    recorder.call([text("never stored"), omitted_display()], execution_id="run-n", step_id="s")
    parts = read_reasoning(recorder.journal_dir, store, execution_id="run-n").parts
    assert [(p.status, p.size) for p in parts] == [(PartStatus.NOT_KEPT, 12), (PartStatus.EMPTY, 0)]


@pytest.mark.parametrize("source", SOURCES)
def test_attempts_label_the_received_value(
    source: str, recorder: Recorder, store: ReasoningStore, tmp_path: Path
) -> None:
    recorder.call([text("try 1")], execution_id="run-r", step_id="plan")
    recorder.call([text("try 2")], execution_id="run-r", step_id="plan")
    recorder.call([text("other step")], execution_id="run-r", step_id="next")

    reading = read(source, recorder, store, tmp_path, execution_id="run-r", step_id="plan")

    (plan,) = reading.steps
    assert [(a.attempt, a.received, a.superseded) for a in plan.attempts] == [(1, False, True), (2, True, False)]
    assert plan.received.parts[0].text == Untrusted("try 2", origin="llm-reasoning:plan")
    assert plan.superseded[0].parts[0].text == Untrusted("try 1", origin="llm-reasoning:plan")
    assert [p.received for p in reading.parts] == [False, True]
    assert (plan.received.provider, plan.received.request_model) == ("anthropic", "claude-test")
    assert plan.received.response_model == "claude-test-20251101"


def test_tenant_scopes_records_and_seals(recorder: Recorder, store: ReasoningStore, tmp_path: Path) -> None:
    recorder.call([text("acme thinking")], execution_id="run-x", step_id="s", tenant="acme")
    recorder.call([text("globex thinking")], execution_id="run-x", step_id="s", tenant="globex")

    acme = read_reasoning(recorder.journal_dir, store, execution_id="run-x", tenant="acme")
    assert [p.text for p in acme.parts] == [Untrusted("acme thinking", origin="llm-reasoning:s")]
    assert read_reasoning(recorder.journal_dir, store, execution_id="run-x").steps == ()
    # erasing one tenant's execution leaves the other tenant's same-named execution alone
    assert erase_execution(store, "acme", "run-x", journal=recorder.journal_dir).blobs_removed == 1
    assert read_reasoning(recorder.journal_dir, store, execution_id="run-x", tenant="acme").parts[0].status == "erased"
    assert read_reasoning(recorder.journal_dir, store, execution_id="run-x", tenant="globex").parts[0].status == "ok"


def test_keyed_digests(store: ReasoningStore, tmp_path: Path) -> None:
    recorder = make_recorder(store, tmp_path, digest="hmac-sha256")
    capture = recorder.call([text("yes")], execution_id="run-k", step_id="s")
    other = recorder.call([text("yes")], execution_id="run-k2", step_id="s")
    digest = capture.parts[0].digest
    assert digest and digest != hashlib.sha256(b"yes").hexdigest()
    assert digest != other.parts[0].digest  # per-execution keys: not comparable across executions
    assert read_reasoning(recorder.journal_dir, store, execution_id="run-k").parts[0].status is PartStatus.OK

    result = erase_execution(store, None, "run-k", journal=recorder.journal_dir)

    assert (result.blobs_removed, result.digest_key_removed) == (1, True)
    assert read_reasoning(recorder.journal_dir, store, execution_id="run-k").parts[0].status is PartStatus.ERASED
    from loom_otel.core._evidence._store._protocol import DigestKeyStore

    assert isinstance(store, DigestKeyStore)
    assert store.digest_key(None, "run-k") is None  # nothing left that could confirm a guess
    assert read_reasoning(recorder.journal_dir, store, execution_id="run-k2").parts[0].status is PartStatus.OK
