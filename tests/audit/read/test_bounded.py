"""read_reasoning_bounded: selection before any store read, caps gated by recorded sizes, the index."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from loom_otel.audit import CaptureKey, PartStatus, ReasoningLimits, ReasoningQuery, read_reasoning_bounded
from loom_otel.audit._index import CaptureIndex, index_path_for
from loom_otel.core import ReasoningConfigError, Untrusted
from loom_otel.core._evidence._store._protocol import ReasoningStore
from tests.support.evidence import SOURCES, CountingStore, Recorder, redacted, source_of, text


def fill(recorder: Recorder) -> dict[str, list[str]]:
    """Three turns of one execution (two parts each), plus noise from another execution."""
    refs: dict[str, list[str]] = {}
    for turn in range(3):
        for phase in ("plan", "act"):
            step_id = f"turn-{turn}/{phase}"
            capture = recorder.call(
                [text(f"{step_id} thinking " + "x" * 100), redacted()], execution_id="run-b", step_id=step_id
            )
            refs[step_id] = [p.text_ref or "" for p in capture.parts]
        recorder.call([text("noise")], execution_id="run-other", step_id=f"turn-{turn}/plan")
    return refs


@pytest.mark.parametrize("source", SOURCES)
def test_selects_before_reading(source: str, recorder: Recorder, store: ReasoningStore, tmp_path: Path) -> None:
    refs = fill(recorder)
    counting = CountingStore(store)
    src = source_of(source, recorder, tmp_path)

    by_prefix = read_reasoning_bounded(src, counting, ReasoningQuery(execution_id="run-b", step_prefix="turn-1/"))

    assert [(p.step_id, p.status) for p in by_prefix.parts] == [
        ("turn-1/plan", PartStatus.OK),
        ("turn-1/plan", PartStatus.REDACTED),
        ("turn-1/act", PartStatus.OK),
        ("turn-1/act", PartStatus.REDACTED),
    ]
    assert not by_prefix.truncated
    assert counting.gets == [refs["turn-1/plan"][0], refs["turn-1/act"][0]]  # only the selected parts
    assert by_prefix.parts[0].text == Untrusted("turn-1/plan thinking " + "x" * 100, origin="llm-reasoning:turn-1/plan")
    assert by_prefix.bytes_read == sum(len(f"turn-1/{phase} thinking " + "x" * 100) for phase in ("plan", "act"))

    counting.gets.clear()
    one = read_reasoning_bounded(src, counting, ReasoningQuery(execution_id="run-b", step_id="turn-2/act"))
    assert [p.step_id for p in one.parts] == ["turn-2/act", "turn-2/act"]
    assert counting.gets == [refs["turn-2/act"][0]]


@pytest.mark.parametrize("source", SOURCES)
def test_caps_truncate_without_reading_past_them(
    source: str, recorder: Recorder, store: ReasoningStore, tmp_path: Path
) -> None:
    refs = fill(recorder)
    counting = CountingStore(store)
    src = source_of(source, recorder, tmp_path)
    query = ReasoningQuery(execution_id="run-b")

    by_parts = read_reasoning_bounded(src, counting, query, ReasoningLimits(max_parts=3))
    assert [p.step_id for p in by_parts.parts] == ["turn-0/plan", "turn-0/plan", "turn-0/act"]
    assert by_parts.truncated
    assert counting.gets == [refs["turn-0/plan"][0], refs["turn-0/act"][0]]

    counting.gets.clear()
    size = len("turn-0/plan thinking " + "x" * 100)
    by_bytes = read_reasoning_bounded(src, counting, query, ReasoningLimits(max_bytes=size + 10))
    assert [p.step_id for p in by_bytes.parts] == ["turn-0/plan", "turn-0/plan"]  # the next text would not fit
    assert by_bytes.truncated and by_bytes.bytes_read == size
    assert counting.gets == [refs["turn-0/plan"][0]]

    everything = read_reasoning_bounded(src, counting, query, ReasoningLimits(max_parts=12))
    assert len(everything.parts) == 12 and not everything.truncated

    counting.gets.clear()
    nothing = read_reasoning_bounded(src, counting, query, ReasoningLimits(max_parts=0))
    assert nothing.parts == () and nothing.truncated and counting.gets == []


def test_received_label_and_tenant(recorder: Recorder, store: ReasoningStore) -> None:
    recorder.call([text("first")], execution_id="run-r", step_id="s", tenant="acme")
    recorder.call([text("second")], execution_id="run-r", step_id="s", tenant="acme")
    reading = read_reasoning_bounded(recorder.journal_dir, store, ReasoningQuery(execution_id="run-r", tenant="acme"))
    assert [(p.attempt, p.received) for p in reading.parts] == [(1, False), (2, True)]
    assert read_reasoning_bounded(recorder.journal_dir, store, ReasoningQuery(execution_id="run-r")).parts == ()


def test_index_is_kept_in_a_private_directory_and_follows_it(
    recorder: Recorder, store: ReasoningStore, tmp_path: Path
) -> None:
    recorder.call([text("one")], execution_id="run-i", step_id="a")
    query = ReasoningQuery(execution_id="run-i")
    assert len(read_reasoning_bounded(recorder.journal_dir, store, query).parts) == 1
    index_file = index_path_for(recorder.journal_dir)
    # a cache only its owner can write (mode 0700), in the user's cache directory: never beside the journal
    # (whoever can write there could edit a row) nor at a guessable temporary path
    assert index_file.exists() and index_file.parent == tmp_path / "cache" / "loom-otel" / "index"
    assert stat.S_IMODE(index_file.parent.stat().st_mode) == 0o700
    assert not list(recorder.journal_dir.parent.glob("*.sqlite"))
    assert not str(index_file).startswith(tempfile.gettempdir() + "/loom-otel-index-")

    recorder.call([text("two")], execution_id="run-i", step_id="b")  # appended: indexed incrementally
    assert [p.step_id for p in read_reasoning_bounded(recorder.journal_dir, store, query).parts] == ["a", "b"]
    with CaptureIndex(recorder.journal_dir) as index:
        assert index.refresh() == 0
        assert len(index) == 2

    # a rewritten journal (same segment, other content) is noticed and the index rebuilt
    (segment,) = [p for p in recorder.journal_dir.rglob("*.jsonl")]
    lines = segment.read_bytes().splitlines(keepends=True)
    captures = [line for line in lines if b'"capture"' in line]
    segment.write_bytes(b"".join(line for line in lines if line != captures[0]))
    os.utime(segment, ns=(1, 1))
    assert [p.step_id for p in read_reasoning_bounded(recorder.journal_dir, store, query).parts] == ["b"]


def test_the_index_directory_is_made_private_and_a_planted_one_is_not_used(tmp_path: Path) -> None:
    from loom_otel.audit._index import index_directory

    home = tmp_path / "cache" / "loom-otel" / "index"
    home.mkdir(parents=True, mode=0o777)
    os.chmod(home, 0o777)  # left writable by others: made the owner's alone before use
    assert index_directory() == home and stat.S_IMODE(home.stat().st_mode) == 0o700
    home.rmdir()
    planted = tmp_path / "planted"
    planted.mkdir()
    home.symlink_to(planted)  # a link to a directory someone else chose: a private temporary one instead
    chosen = index_directory()
    assert chosen != home and planted not in chosen.parents and chosen.name.startswith("loom-otel-index-")
    assert stat.S_IMODE(chosen.stat().st_mode) == 0o700


def test_index_survives_garbage(recorder: Recorder, store: ReasoningStore, tmp_path: Path) -> None:
    recorder.call([text("one")], execution_id="run-g", step_id="a")
    custom = tmp_path / "elsewhere.sqlite"
    custom.write_bytes(b"not a database")
    reading = read_reasoning_bounded(
        recorder.journal_dir, store, ReasoningQuery(execution_id="run-g"), index_path=custom
    )
    assert [p.status for p in reading.parts] == [PartStatus.OK]


def test_negative_limits_are_refused() -> None:
    with pytest.raises(ReasoningConfigError):
        ReasoningLimits(max_parts=-1)


@pytest.mark.parametrize("source", SOURCES)
def test_selects_only_the_captures_named(
    source: str, recorder: Recorder, store: ReasoningStore, tmp_path: Path
) -> None:
    mine = recorder.call([text("CANARY-mine-61c2 thinking"), redacted()], execution_id="run-c", step_id="plan")
    theirs = recorder.call([text("CANARY-theirs-0a7e thinking")], execution_id="run-c", step_id="plan")
    counting = CountingStore(store)
    src = source_of(source, recorder, tmp_path)
    key = CaptureKey(mine.attempt, tuple(p.text_ref or "" for p in mine.parts))
    query = ReasoningQuery(execution_id="run-c", step_id="plan", captures=frozenset({key}))

    reading = read_reasoning_bounded(src, counting, query)

    assert [(p.attempt, p.status) for p in reading.parts] == [(mine.attempt, PartStatus.OK), (mine.attempt, "redacted")]
    assert counting.gets == [mine.parts[0].text_ref]  # the other capture is never read from the store
    assert "CANARY-theirs" not in repr([p.text for p in reading.parts if p.text])
    same_attempt = CaptureKey(theirs.attempt, ("not-its-ref",))  # the attempt alone selects nothing
    assert (
        read_reasoning_bounded(
            src, counting, ReasoningQuery(execution_id="run-c", captures=frozenset({same_attempt}))
        ).parts
        == ()
    )
    everything = read_reasoning_bounded(src, store, ReasoningQuery(execution_id="run-c", step_id="plan"))
    assert len(everything.parts) == 3
