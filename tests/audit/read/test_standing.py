"""How far each record is proven (issue 42 §3): ``signed``, ``chained`` or ``unproven``, judged with the
keys the reader trusts; an ``unproven`` tombstone (an OTLP span from an unknown origin, a journal line
past a broken link, a copy that rewrites a chained seq) never turns ``missing`` into ``erased``."""

from __future__ import annotations

import io
import json
import shutil
import time
from argparse import Namespace
from pathlib import Path

import pytest

from loom_otel.audit import PartStatus, erase_execution, read_reasoning
from loom_otel.audit._captures import ReasoningSource
from loom_otel.audit._tombstones import tombstone_attributes
from loom_otel.cli._audit import run_show
from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._evidence._canonical import GENESIS, canonical_json, chain_hash
from loom_otel.core._evidence._journal._checkpoint import generate_key, load_public_key
from loom_otel.core._evidence._journal._reader import iter_records, list_origins, segments
from loom_otel.core._evidence._journal._records import RECORD_SPAN, event_for_record
from loom_otel.core._evidence._store._protocol import ReasoningStore
from loom_otel.testing import find_leaks
from tests.support.evidence import Recorder, make_recorder, source_of, text

CANARY = "CANARY-standing-4f1c9a reasoning that was lost"


def _lose_blob(recorder: Recorder, store: ReasoningStore, execution_id: str) -> str:
    """One capture, checkpointed (signed) and forwarded; then its blob is lost (deleted, no tombstone)."""
    capture = recorder.call([text(CANARY)], execution_id=execution_id, step_id="s")
    recorder.runtime.journal.checkpoint()
    recorder.forward("checkpoint")
    ref = capture.parts[0].text_ref
    assert ref is not None
    store.delete(ref)
    return ref


def _forged(execution_id: str, *, origin: str, seq: int, prev: str) -> dict[str, object]:
    """A tombstone record whose hash recomputes (the strongest forgery: only its place in a chain, or the
    key that signed its checkpoint, can tell it)."""
    attributes = tombstone_attributes(None, execution_id, scope="execution", by="dpo", reason="gdpr request")
    record: dict[str, object] = {
        "v": 1,
        "origin": origin,
        "seq": seq,
        "prev": prev,
        "time": time.time_ns(),
        "type": attr.RECORD_ERASURE,
        "attributes": dict(attributes),
    }
    record["hash"] = chain_hash(prev, canonical_json(record))
    return record


def _send_span(recorder: Recorder, record: dict[str, object]) -> None:
    """What anyone who can reach the collector can do: one OTLP span carrying a record."""
    name, attributes, time_ns = event_for_record(record)
    with recorder.provider.get_tracer("forger").start_as_current_span(RECORD_SPAN) as span:
        span.add_event(name, attributes, time_ns)


def _origin_head(recorder: Recorder) -> tuple[str, int, str]:
    records = [r for r in iter_records(recorder.journal_dir)]
    last = records[-1]
    return str(last["origin"]), int(str(last["seq"])), str(last["hash"])


def _assert_missing(
    reading_source: ReasoningSource, store: ReasoningStore, execution_id: str, *, capture: str = "signed"
) -> None:
    reading = read_reasoning(reading_source, store, execution_id=execution_id)
    (part,) = reading.parts
    assert part.status is PartStatus.MISSING and part.erasure is None
    assert reading.steps[0].attempts[0].standing == capture


@pytest.mark.parametrize("source", ["collector", "spans"])
@pytest.mark.parametrize("where", ["unknown-origin", "broken-link", "rewritten-seq"])
def test_a_forged_tombstone_span_never_makes_a_lost_blob_erased(
    source: str, where: str, recorder: Recorder, store: ReasoningStore, tmp_path: Path
) -> None:
    _lose_blob(recorder, store, "run-f")
    origin, seq, head = _origin_head(recorder)
    forged = {
        "unknown-origin": _forged("run-f", origin="forged-origin", seq=1, prev=GENESIS),
        "broken-link": _forged("run-f", origin=origin, seq=seq + 1, prev="f" * 64),
        "rewritten-seq": _forged("run-f", origin=origin, seq=seq, prev=head),
    }[where]
    _send_span(recorder, forged)
    # two copies of one seq: the chain is disputed from there on, its checkpoint there proves nothing
    capture = "unproven" if where == "rewritten-seq" else "signed"
    _assert_missing(source_of(source, recorder, tmp_path), store, "run-f", capture=capture)


@pytest.mark.parametrize("where", ["broken-link", "new-origin", "untrusted-key"])
def test_a_forged_tombstone_line_in_the_journal_never_makes_a_lost_blob_erased(
    where: str, recorder: Recorder, store: ReasoningStore, tmp_path: Path
) -> None:
    _lose_blob(recorder, store, "run-j")
    origin, seq, _ = _origin_head(recorder)
    if where == "broken-link":
        (_, segment), *_ = reversed(segments(recorder.journal_dir / origin))
        with segment.open("a") as fh:
            fh.write(json.dumps(_forged("run-j", origin=origin, seq=seq + 1, prev="0" * 63 + "1")) + "\n")
    else:  # an intact chain of its own, checkpointed unsigned or by a key nobody trusts
        from loom_otel.core._evidence._journal._writer import Journal

        key = None
        if where == "untrusted-key":
            key = tmp_path / "mallory.pem"
            generate_key(key)
        journal = Journal(recorder.journal_dir, checkpoint_key=key)
        journal.append(
            attr.RECORD_ERASURE,
            tombstone_attributes(None, "run-j", scope="execution", by="dpo", reason="gdpr request"),
        )
        journal.close()
        assert len(list_origins(recorder.journal_dir)) == 2
    _assert_missing(recorder.journal_dir, store, "run-j")


@pytest.mark.parametrize("source", ["journal", "collector", "spans"])
def test_a_genuine_erasure_reads_erased_and_signed(
    source: str, recorder: Recorder, store: ReasoningStore, tmp_path: Path
) -> None:
    recorder.call([text(CANARY)], execution_id="run-g", step_id="s")
    erase_execution(store, None, "run-g", journal=recorder.journal_dir, reason="gdpr request", by="dpo")
    recorder.forward("erasure")
    recorder.forward("checkpoint")
    reading = read_reasoning(source_of(source, recorder, tmp_path), store, execution_id="run-g")
    (part,) = reading.parts
    assert part.status is PartStatus.ERASED and part.erasure is not None
    assert (part.erasure.standing, part.erasure.reason, part.erasure.by) == ("signed", "gdpr request", "dpo")
    assert reading.steps[0].attempts[0].standing == "signed"


def test_records_past_the_last_signed_checkpoint_are_chained(
    recorder: Recorder, store: ReasoningStore, tmp_path: Path
) -> None:
    recorder.call([text("before the checkpoint")], execution_id="run-c", step_id="one")
    recorder.runtime.journal.checkpoint()
    recorder.call([text("after it")], execution_id="run-c", step_id="two")
    copy = tmp_path / "as-it-was"  # read as it is now: a timed checkpoint of the live journal would sign it
    shutil.copytree(recorder.journal_dir, copy)
    reading = read_reasoning(copy, store, execution_id="run-c")
    assert [(s.step_id, s.received.standing) for s in reading.steps] == [("one", "signed"), ("two", "chained")]
    assert [p.status for p in reading.parts] == [PartStatus.OK, PartStatus.OK]


def test_a_standing_follows_the_journal_as_it_grows(recorder: Recorder, store: ReasoningStore) -> None:
    """The chains are walked again when the journal changed (the viewer asks on every page)."""
    recorder.call([text("one")], execution_id="run-w", step_id="one")
    recorder.runtime.journal.checkpoint()
    recorder.call([text("two")], execution_id="run-w", step_id="two")
    before = read_reasoning(recorder.journal_dir, store, execution_id="run-w")
    recorder.runtime.journal.checkpoint()
    after = read_reasoning(recorder.journal_dir, store, execution_id="run-w")
    assert [s.received.standing for s in before.steps] == ["signed", "chained"]
    assert [s.received.standing for s in after.steps] == ["signed", "signed"]


def test_without_a_trusted_key_nothing_is_proven(
    recorder: Recorder, store: ReasoningStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Documented (README "Reading it back"): with no key trusted (no ``--trust``, no
    ``LOOM_OTEL_CHECKPOINT_KEY``) every record is ``unproven``: an intact chain anyone could have written
    proves nothing, so even a genuine erasure reads ``missing``; trusting the signing key proves it."""
    signing_key = load_public_key(tmp_path / "checkpoint.key")  # the key _isolated signs with
    recorder.call([text(CANARY)], execution_id="run-n", step_id="s")
    erase_execution(store, None, "run-n", journal=recorder.journal_dir)
    monkeypatch.delenv("LOOM_OTEL_CHECKPOINT_KEY")
    reading = read_reasoning(recorder.journal_dir, store, execution_id="run-n")
    assert [(p.status, reading.steps[0].received.standing) for p in reading.parts] == [(PartStatus.MISSING, "unproven")]
    trusted = read_reasoning(recorder.journal_dir, store, execution_id="run-n", trust=[signing_key])
    assert [(p.status, trusted.steps[0].received.standing) for p in trusted.parts] == [(PartStatus.ERASED, "signed")]
    other = tmp_path / "other.pem"
    generate_key(other)
    wrong = read_reasoning(recorder.journal_dir, store, execution_id="run-n", trust=[load_public_key(other)])
    assert wrong.parts[0].status is PartStatus.MISSING and wrong.steps[0].received.standing == "unproven"


def _show(journal: Path, store_url: str, *flags: str, trust: list[str]) -> tuple[int, str]:
    args = Namespace(
        execution="run-s",
        step=None,
        tenant=None,
        text=False,
        json="--json" in flags,
        journal=str(journal),
        store=store_url,
        trust=trust,
    )
    out = io.StringIO()
    code = run_show(args, out=out, err=io.StringIO())
    return code, out.getvalue()


def test_audit_show_prints_each_parts_standing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loom_otel.core import FileReasoningStore

    store = FileReasoningStore(tmp_path / "store", fsync=False)
    recorder = make_recorder(store, tmp_path, journal=tmp_path / "journal")
    recorder.call([text(CANARY)], execution_id="run-s", step_id="s")
    recorder.runtime.journal.checkpoint()
    public = tmp_path / "checkpoint.pub"
    public.write_text(generate_public(tmp_path / "checkpoint.key"))
    monkeypatch.delenv("LOOM_OTEL_CHECKPOINT_KEY")
    url = f"file://{store.root}"
    code, out = _show(recorder.journal_dir, url, trust=[str(public)])
    header = next(line for line in out.splitlines() if line.lstrip().startswith("attempt"))
    row = next(line for line in out.splitlines() if "(received)" in line)
    assert code == 0 and "standing" in header.split() and "signed" in row.split()
    code, out = _show(recorder.journal_dir, url, "--json", trust=[str(public)])
    (part,) = json.loads(out)["steps"][0]["attempts"][0]["parts"]
    assert code == 0 and part["standing"] == "signed"
    code, out = _show(recorder.journal_dir, url, "--json", trust=[])
    assert json.loads(out)["steps"][0]["attempts"][0]["parts"][0]["standing"] == "unproven"
    assert not find_leaks([CANARY], texts=[out])


def test_audit_show_says_why_an_erasure_reads_missing_without_a_trusted_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deployment that never set a key erases, then reads ``missing``: the table says why, and what
    proves the erasure; with the key trusted the part reads ``erased`` and the line is gone."""
    from loom_otel.core import FileReasoningStore

    store = FileReasoningStore(tmp_path / "store", fsync=False)
    recorder = make_recorder(store, tmp_path, journal=tmp_path / "journal")
    recorder.call([text(CANARY)], execution_id="run-s", step_id="s")
    erase_execution(store, None, "run-s", journal=recorder.journal_dir)
    public = tmp_path / "checkpoint.pub"
    public.write_text(generate_public(tmp_path / "checkpoint.key"))
    monkeypatch.delenv("LOOM_OTEL_CHECKPOINT_KEY")
    url = f"file://{store.root}"
    code, out = _show(recorder.journal_dir, url, trust=[])
    assert code == 0 and "missing" in out and "no key is trusted" in out and "--trust KEYFILE" in out
    code, out = _show(recorder.journal_dir, url, trust=[str(public)])
    assert code == 0 and "erased" in out and "no key is trusted" not in out


def generate_public(private: Path) -> str:
    """The PEM public key of a private key file (what ``loom-otel keygen`` prints)."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(private.read_bytes(), password=None)
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
