"""Binding records: the newest ``KEPT`` stay in memory; older ones are unknown (their blocks are sent
as the application holds them) and a restart loads the newest files last."""

from __future__ import annotations

import json
import os

import pytest

from loom_otel.core._continuation import _bindings as _bindings
from loom_otel.core._continuation._bindings import Bindings, BlockRecord


def _record(n: int) -> tuple[bytes, BlockRecord]:
    return n.to_bytes(32, "big"), BlockRecord(bytes(32), "anthropic", "m", bytes(32), bytes(32), f"{n:064x}", None)


def test_only_the_newest_records_are_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(_bindings, "KEPT", 3)
    bindings = Bindings(tmp_path / "b")
    for n in range(5):
        bindings.add([_record(n)], [])
    assert [bindings.block(_record(n)[0]) is not None for n in range(5)] == [False, False, True, True, True]


def test_a_restart_keeps_the_newest_files(tmp_path, monkeypatch):
    writer = Bindings(tmp_path / "b")
    writer.add([_record(n) for n in range(4)], [])
    writer.close()
    older = next((tmp_path / "b").glob("*.jsonl"))
    os.utime(older, (1_000_000, 1_000_000))
    newer = Bindings(tmp_path / "b")
    newer.add([_record(9)], [])  # a second writer's file, written after
    newer.close()
    monkeypatch.setattr(_bindings, "KEPT", 2)
    restarted = Bindings(tmp_path / "b")
    assert restarted.block(_record(9)[0]) is not None and restarted.block(_record(3)[0]) is not None
    assert restarted.block(_record(0)[0]) is None


def test_a_record_made_again_counts_as_new(tmp_path, monkeypatch):
    monkeypatch.setattr(_bindings, "KEPT", 2)
    bindings = Bindings(tmp_path / "b")
    bindings.add([_record(0)], [])
    bindings.add([_record(1)], [])
    key = _record(0)[0]
    bindings.add([(key, BlockRecord(bytes(32), "anthropic", "other-model", bytes(32), bytes(32), None, None))], [])
    bindings.add([_record(2)], [])  # the oldest is now record 1, not the re-made record 0
    assert bindings.block(key) is not None and bindings.block(_record(1)[0]) is None


@pytest.mark.parametrize("model", [None, "claude-x", 'mod"el\\é\u2028'])
@pytest.mark.parametrize("split", [(), (3, 4)])
def test_a_record_line_is_the_json_it_reads_back(model: str | None, split: tuple[int, ...]) -> None:
    record = BlockRecord(b"\x01" * 32, "anthropic", model, b"\x02" * 32, b"\x03" * 32, None, "r" * 10, split)
    line = record.to_json(b"\x09" * 32)
    raw = json.loads(line)
    assert raw["m"] == model and raw["d"] is None and raw.get("x", []) == list(split)
    assert line.isascii() and "\n" not in line
    assert BlockRecord.from_json(line) == (b"\x09" * 32, record)


def _lines(directory) -> list[str]:
    return [line for path in sorted(directory.glob("*.jsonl")) for line in path.read_text().splitlines()]


def test_a_record_is_known_at_once_and_written_with_the_journal(tmp_path):
    from loom_otel.core._evidence import _durability

    bindings = Bindings(tmp_path / "b", deferred=True)  # journal durability ``batch``
    bindings.add([_record(1)], [])
    assert bindings.block(_record(1)[0]) is not None  # the next request of this process finds it
    assert _lines(tmp_path / "b") == []  # not written on the model call's path
    _durability.sync_dependents()  # what the journal's group commit and force_flush run
    assert [BlockRecord.from_json(line) for line in _lines(tmp_path / "b")] == [_record(1)]
    _durability.sync_dependents()
    assert len(_lines(tmp_path / "b")) == 1  # nothing written twice
    bindings.close()


@pytest.mark.parametrize("durability", ["os", "always"])
def test_under_os_and_always_a_record_is_written_before_add_returns(tmp_path, durability):
    bindings = _bindings.bindings_for(tmp_path / "journal", durability=durability)
    assert bindings.fsync == (durability == "always") and not bindings.deferred
    bindings.add([_record(1)], [])
    assert len(_lines(tmp_path / "journal.bindings")) == 1
    _bindings.forget_bindings()


def test_pending_lines_are_bounded_when_nothing_syncs(tmp_path, monkeypatch):
    monkeypatch.setattr(_bindings, "_PENDING_LINES", 3)
    bindings = Bindings(tmp_path / "b", deferred=True)
    for n in range(2):
        bindings.add([_record(n)], [])
    assert _lines(tmp_path / "b") == []
    bindings.add([_record(2)], [])
    assert len(_lines(tmp_path / "b")) == 3
    bindings.close()


def test_close_writes_what_is_pending_and_a_restart_loads_it(tmp_path):
    writer = Bindings(tmp_path / "b", deferred=True)
    writer.add([_record(5)], [])
    writer.close()
    assert Bindings(tmp_path / "b").block(_record(5)[0]) is not None


def test_an_unwritable_directory_never_raises_from_a_sync(tmp_path, caplog):
    (tmp_path / "b").write_text("a file, not a directory")
    bindings = Bindings(tmp_path / "b", deferred=True)
    bindings.add([_record(1)], [])
    bindings.sync_pending()
    assert bindings.block(_record(1)[0]) is not None
    assert "binding records not written" in caplog.text


@pytest.mark.parametrize("deferred", [True, False])
def test_recording_blocks_never_waits_on_a_line_being_written(tmp_path, monkeypatch, deferred):
    """Issue 49, target 5: a write under way (the group commit's, or another call's under ``os``) holds
    the file, never the records: a call recording blocks meanwhile returns, and the block is known."""
    import threading

    entered, release = threading.Event(), threading.Event()
    real_write = os.write

    def held_write(fd: int, data: bytes) -> int:
        entered.set()
        assert release.wait(30)
        return real_write(fd, data)

    bindings = Bindings(tmp_path / "b", deferred=deferred)
    bindings.add([_record(0)], [])
    monkeypatch.setattr(_bindings, "_write", held_write)
    writer = threading.Thread(target=bindings.sync_pending if deferred else lambda: bindings.add([_record(1)], []))
    writer.start()
    try:
        assert entered.wait(30)
        recorder = threading.Thread(target=bindings.add, args=([_record(2)], []))
        recorder.start()
        recorder.join(timeout=5 if deferred else 0.5)
        if deferred:
            assert not recorder.is_alive()  # it never touched the file
        assert bindings.block(_record(2)[0]) is not None
    finally:
        release.set()
        writer.join(30)
        recorder.join(30)
    bindings.close()
    files = (tmp_path / "b").glob("*.jsonl")
    lines = [json.loads(line)["k"] for path in files for line in path.read_text().splitlines()]
    written = (0, 2) if deferred else (0, 1, 2)
    assert sorted(lines) == [_record(n)[0].hex() for n in written]
