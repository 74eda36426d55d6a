"""The capture index is persisted and kept up to date: a listing reads one summary row per execution and
audience (not every capture), the same as reading the captures; a later process reuses the file and
indexes only what was appended; a damaged file is made again from the journal, never trusted."""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from loom_otel.audit._index import CaptureIndex, ExecutionFilter, ListedExecution, index_path_for
from tests.support.evidence import Recorder, summary, text

_Listing = tuple[list[ListedExecution], int]


def _asked(index: CaptureIndex, **keep: Any) -> tuple[_Listing, int]:
    """The listing of what tenant ``hidden`` is left out of, and how many times the rule was asked."""
    calls: list[tuple[str | None, str | None, str | None]] = []

    def rule(tenant: str | None, principal: str | None, owner: str | None) -> bool:
        calls.append((tenant, principal, owner))
        return tenant != "hidden"

    listed = index.executions(rule, ExecutionFilter(**keep), 0, 50)
    return listed, len(calls)


def _listing(index: CaptureIndex, **keep: Any) -> _Listing:
    return _asked(index, **keep)[0]


def _capture_many(recorder: Recorder) -> None:
    for n in range(12):
        recorder.call([text(f"one {n}")], execution_id="run-1", step_id=f"s{n}", model="m-one")
    recorder.call([text("two"), summary("sum")], execution_id="run-1", step_id="t", model="m-two")
    recorder.call([text("acme")], execution_id="run-2", step_id="a", tenant="acme")
    recorder.call([text("hidden")], execution_id="run-3", step_id="a", tenant="hidden")


def test_a_listing_reads_one_row_per_execution_and_audience(recorder: Recorder) -> None:
    _capture_many(recorder)
    with CaptureIndex(recorder.journal_dir) as index:
        index.refresh()
        (listed, total), asked = _asked(index)
        assert asked <= 2 * 3  # per audience row (3), twice (the count, the page): not per capture (15)
        assert total == 2 and [r.execution_id for r in listed] == ["run-2", "run-1"]
        run1 = listed[1]
        assert (run1.calls, run1.parts, run1.providers) == (13, 14, ("anthropic",))
        assert run1.models == ("m-one-20251101", "m-two-20251101")
        # the same as reading every capture (a search does)
        assert _listing(index, search="run-") == (listed, total)
        assert _listing(index, until=run1.last) == ([run1], 1) == _listing(index, until=run1.last, search="run-1")


def test_a_later_process_reuses_the_index_and_indexes_only_what_was_appended(recorder: Recorder) -> None:
    _capture_many(recorder)
    with CaptureIndex(recorder.journal_dir) as index:
        assert index.refresh() == 15
    recorder.call([text("late")], execution_id="run-1", step_id="late", model="m-late")
    recorder.call([text("new")], execution_id="run-4", step_id="a")
    with CaptureIndex(recorder.journal_dir) as index:  # as a restarted viewer opens it
        assert index.refresh() == 2
        listed, total = _listing(index)
        assert total == 3 and listed[0].execution_id == "run-4"
        run1 = next(r for r in listed if r.execution_id == "run-1")
        assert run1.calls == 14 and "m-late-20251101" in run1.models
        assert _listing(index, search="run") == (listed, total)


def test_a_damaged_index_file_is_made_again_from_the_journal(recorder: Recorder) -> None:
    _capture_many(recorder)
    with CaptureIndex(recorder.journal_dir) as index:
        index.refresh()
        expected = _listing(index)
        rows = index.rows("run-1", None, None)
    path = index_path_for(recorder.journal_dir)
    with sqlite3.connect(path) as db:  # the pages opening and refreshing read: the schema, meta and files
        size = int(db.execute("PRAGMA page_size").fetchone()[0])
        kept = {1} | {
            int(root)
            for name, root in db.execute("SELECT name, rootpage FROM sqlite_master")
            if name in ("meta", "files") or name.startswith(("sqlite_autoindex_meta", "sqlite_autoindex_files"))
        }
    db.close()
    data = bytearray(path.read_bytes())
    rng = random.Random(49)
    for page in range(1, len(data) // size + 1):  # every other page (the captures' rows) overwritten
        if page not in kept:
            data[(page - 1) * size : page * size] = rng.randbytes(size)
    path.write_bytes(bytes(data))
    with CaptureIndex(recorder.journal_dir) as index:
        index.refresh()
        assert _listing(index) == expected
        assert index.rows("run-1", None, None) == rows
        assert [r.step_id for r in index.read(rows)] == [f"s{n}" for n in range(12)] + ["t"]
    path.write_bytes(bytes(data[: len(data) // 2]))  # cut short
    with CaptureIndex(recorder.journal_dir) as index:
        assert index.refresh() == 15 and _listing(index) == expected


def test_a_kept_connection_follows_a_rebuild_made_by_another(recorder: Recorder) -> None:
    """A viewer thread keeps its connection between requests; when another thread rebuilds the file (after
    finding a row that no longer matches its line), the kept connection reads the new file at its next
    refresh, not the unlinked old one with the edited row."""
    _capture_many(recorder)
    with CaptureIndex(recorder.journal_dir) as kept, CaptureIndex(recorder.journal_dir) as other:
        kept.refresh()
        with sqlite3.connect(index_path_for(recorder.journal_dir)) as db:
            db.execute("UPDATE records SET tenant='edited' WHERE execution_id='run-2'")
        other.refresh()
        other.rebuild()
        other.refresh()
        kept.refresh()
        tenants = {r.tenant for r in kept.rows("run-2", "acme", None)}
        assert tenants == {"acme"}


def test_one_execution_is_found_by_its_id_asking_the_rule_of_its_rows_alone(recorder: Recorder) -> None:
    _capture_many(recorder)
    with CaptureIndex(recorder.journal_dir) as index:
        index.refresh()
        (listed, total), asked = _asked(index, execution_id="run-1")
        assert total == 1 and [r.execution_id for r in listed] == ["run-1"]
        assert asked <= 2  # run-1's one audience row, twice (the count, the page): not every capture (15)
        assert (listed, total) == _listing(index, search="run-1")  # the same as the search finds
        assert _asked(index, execution_id="run-3") == (([], 0), 2)  # its row asked, refused
        assert _listing(index, execution_id="run-") == ([], 0)  # the exact id, not a substring


def test_a_new_mtime_alone_is_no_rewrite_but_new_bytes_of_the_same_size_are(recorder: Recorder) -> None:
    """The kernel sets a file's mtime before its size when a line is appended, so a segment can be seen at
    its old size with a new mtime: not a rewrite while the bytes indexed last are still there (nothing is
    indexed again); the same size with those bytes changed is, and the index is made again in the same file
    (a connection another worker keeps stays on it)."""
    _capture_many(recorder)
    with CaptureIndex(recorder.journal_dir) as index, CaptureIndex(recorder.journal_dir) as other:
        assert index.refresh() == 15
        inode = index_path_for(recorder.journal_dir).stat().st_ino
        (segment,) = recorder.journal_dir.glob("*/*.jsonl")
        st = segment.stat()
        os.utime(segment, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        assert index.refresh() == 0 and other.refresh() == 0
        data = segment.read_bytes()
        segment.write_bytes(data[:-3] + b"}}\n" if not data.endswith(b"}}\n") else data[:-3] + b"]}\n")
        assert index.refresh() == 14  # the last line no longer a capture; the others indexed again
        assert index_path_for(recorder.journal_dir).stat().st_ino == inode
        assert other.refresh() == 0 and len(other.rows("run-1", None, None)) == len(index.rows("run-1", None, None))


def test_the_write_ahead_log_is_emptied_once_it_grows_past_its_bound(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers read the index all the time, so SQLite's own checkpoints never start its log again: a
    writer empties it past ``_WAL_BYTES`` (here: any size), and what it held is in the file."""
    from loom_otel.audit import _index

    _capture_many(recorder)
    with CaptureIndex(recorder.journal_dir) as reader:  # a reader holding the file open, as a worker does
        assert reader.refresh() == 15
        wal = Path(f"{index_path_for(recorder.journal_dir)}-wal")
        _capture_many(recorder)
        monkeypatch.setattr(_index, "_WAL_BYTES", 1 << 40)
        with CaptureIndex(recorder.journal_dir) as writer:
            assert writer.refresh() == 15 and wal.stat().st_size > 0  # kept in the log below the bound
        _capture_many(recorder)
        monkeypatch.setattr(_index, "_WAL_BYTES", 1)
        with CaptureIndex(recorder.journal_dir) as writer:
            assert writer.refresh() == 15
        assert wal.stat().st_size == 0
        assert len(reader.rows("run-1", None, None)) == 39  # 13 captures three times, read from the file
