from __future__ import annotations

import asyncio
import errno
import json
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any, cast

import pytest

from loom_otel.audit import verify
from loom_otel.core import LoomOtelWarning
from loom_otel.core._evidence._canonical import GENESIS
from loom_otel.core._evidence._journal import _writer as _journal
from loom_otel.core._evidence._journal._checkpoint import CHECKPOINT_HEAD, CHECKPOINT_SIZE
from loom_otel.core._evidence._journal._merkle import CompactRange, leaf_hash
from loom_otel.core._evidence._journal._note import CHECKPOINT_ROOT
from loom_otel.core._evidence._journal._reader import iter_records, origin_is_live
from loom_otel.core._evidence._journal._writer import Journal, open_journal


def test_records_chain_and_close_checkpoints(journal_dir: Path) -> None:
    j = Journal(journal_dir, durability="batch", checkpoint_key=None, checkpoint_every=1000, checkpoint_interval=0)
    first = j.append("capture", {"a": 1, "l": ["x", "y"], "n": [1, 2], "b": [True, False]})
    second = j.append("capture", {"a": 2})
    assert (first.seq, first.prev) == (1, GENESIS)
    assert second.prev == first.hash
    assert j.head == (2, second.hash)
    j.close()
    records = list(iter_records(journal_dir))
    assert [r["type"] for r in records] == ["capture", "capture", "checkpoint"]
    assert records[2]["attributes"][CHECKPOINT_SIZE] == 2
    assert records[2]["attributes"][CHECKPOINT_HEAD] == second.hash
    report = verify(journal_dir)
    assert report.ok, report.problems


@pytest.mark.parametrize("policy", ["always", "batch", "os"])
def test_closing_a_closed_journal_does_nothing_until_it_is_written_again(
    journal_dir: Path, monkeypatch: pytest.MonkeyPatch, policy: str
) -> None:
    """``reset_runtime`` closes every journal of the process, and a suite opens one a test: each close of
    an idle one must cost nothing (it synced every store's pending writes, and woke threads, each time)."""
    syncs: list[str] = []
    monkeypatch.setattr(_journal._durability, "sync_dependents", lambda: syncs.append("stores"))
    j = Journal(journal_dir, durability=policy, checkpoint_key=None, checkpoint_interval=0)
    j.close()  # never written
    assert syncs == [] and list(iter_records(journal_dir)) == []
    j.append("capture", {"i": 1})
    j.close()
    closed = len(syncs)
    assert closed >= 1 and not j.live
    j.close()
    j.close()
    assert len(syncs) == closed
    assert [r["type"] for r in iter_records(journal_dir)] == ["capture", "checkpoint"]
    j.append("capture", {"i": 2})  # reopened: the next close does its work again
    j.close()
    assert len(syncs) > closed and not j.live
    assert [r["type"] for r in iter_records(journal_dir)] == ["capture", "checkpoint", "capture", "checkpoint"]
    assert verify(journal_dir).ok


def test_segments_rotate(journal_dir: Path) -> None:
    j = Journal(journal_dir, durability="os", checkpoint_key=None, segment_records=10, checkpoint_interval=0)
    for i in range(35):
        j.append("capture", {"i": i})
    j.close()
    (origin,) = list(journal_dir.iterdir())
    assert sorted(p.name for p in origin.glob("*.jsonl")) == [f"{n:08d}.jsonl" for n in range(1, 5)]
    assert verify(journal_dir).ok


@pytest.mark.parametrize("policy", ["always", "batch", "os"])
def test_durability_policies(journal_dir: Path, monkeypatch: pytest.MonkeyPatch, policy: str) -> None:
    syncs: list[int] = []
    real = _journal._sync
    monkeypatch.setattr(_journal, "_sync", lambda fd: (syncs.append(fd), real(fd)))
    j = Journal(journal_dir, durability=policy, checkpoint_key=None, checkpoint_interval=0)
    for i in range(20):
        entry = j.append("capture", {"i": i})
        if policy == "always":
            assert len(syncs) == i + 1  # synced before the append returned
    if policy == "batch":
        deadline = time.monotonic() + 5
        while j._synced < entry.seq and time.monotonic() < deadline:
            time.sleep(0.001)
        assert j._synced >= entry.seq  # the group commit synced every record, a window later
        assert 1 <= len(syncs) <= 20
    else:
        assert len(syncs) == {"always": 20, "os": 0}[policy]
    j.close()


def test_batch_appends_do_not_wait_for_the_disk(journal_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    real = _journal._sync
    monkeypatch.setattr(_journal, "_sync", lambda fd: (release.wait(10), real(fd)))
    j = Journal(journal_dir, durability="batch", checkpoint_key=None, checkpoint_interval=0)
    started = time.monotonic()
    entries = [j.append("capture", {"i": i}) for i in range(50)]
    assert time.monotonic() - started < 5  # the fsync is stuck, the appends are not
    assert j._synced < entries[-1].seq
    release.set()
    deadline = time.monotonic() + 5
    while j._synced < entries[-1].seq and time.monotonic() < deadline:
        time.sleep(0.001)
    assert j._synced >= entries[-1].seq
    j.close()
    assert verify(journal_dir).ok


def test_batch_group_commit_shares_syncs(journal_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    syncs: list[int] = []
    real = _journal._sync
    monkeypatch.setattr(_journal, "_sync", lambda fd: (syncs.append(fd), real(fd)))
    j = Journal(journal_dir, durability="batch", checkpoint_key=None, checkpoint_interval=0, checkpoint_every=10**6)
    failures: list[str] = []

    def work() -> None:
        for i in range(100):
            j.append("capture", {"i": i})

    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    j.checkpoint()  # synced through the last record before it returns
    assert j._synced == j.head[0]
    assert len(syncs) < 400  # one fsync per group, not per record
    j.close()
    report = verify(journal_dir)
    assert report.ok and report.records == 1601


def test_bad_durability_is_refused(journal_dir: Path) -> None:
    with pytest.raises(ValueError, match="durability"):
        Journal(journal_dir, durability=cast(Any, "sometimes"))


def test_short_write_leaves_no_torn_line(journal_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    j = Journal(journal_dir, durability="os", checkpoint_key=None, checkpoint_interval=0)
    j.append("capture", {"i": 0})
    real_write = os.write
    monkeypatch.setattr(_journal, "_write", lambda fd, data: real_write(fd, data[: len(data) // 2]))
    with pytest.raises(OSError, match="short write"):
        j.append("capture", {"i": 1})
    monkeypatch.setattr(_journal, "_write", real_write)
    assert j.append("capture", {"i": 1}).seq == 2
    j.close()
    report = verify(journal_dir)
    assert report.ok, report.problems


def test_the_lock_is_never_held_across_a_write_and_waiting_lines_go_in_one(
    journal_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 49, target 1: a thread writing its line holds no lock (a write gives the interpreter up: every
    capture would queue behind it); the lines reserved meanwhile are written together by the next turn."""
    j = Journal(journal_dir, durability="batch", checkpoint_key=None, checkpoint_interval=0)
    j.append("capture", {"i": 0})
    entered, release = threading.Event(), threading.Event()
    writes: list[int] = []
    real_write = os.write

    def held(fd: int, data: bytes) -> int:
        writes.append(data.count(b"\n"))
        if len(writes) == 1:
            entered.set()
            assert release.wait(30)
        return real_write(fd, data)

    monkeypatch.setattr(_journal, "_write", held)
    first = threading.Thread(target=j.append, args=("capture", {"i": 1}))
    first.start()
    assert entered.wait(30)
    others = [threading.Thread(target=j.append, args=("capture", {"i": i})) for i in (2, 3)]
    for each in others:
        each.start()
    deadline = time.monotonic() + 30
    while j.head[0] < 4 and time.monotonic() < deadline:  # ``head`` takes the lock: free during the write
        time.sleep(0.01)
    assert j.head[0] == 4  # both reserved their place while the first line was being written
    release.set()
    for each in (first, *others):
        each.join(30)
    assert writes == [1, 2]  # the two waiting lines in one write
    j.close()
    report = verify(journal_dir)
    assert report.ok and report.records == 5, report.problems


def test_a_failed_write_takes_the_chain_back_so_it_never_has_a_hole(
    journal_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads append while writes fail now and then: each append that returned is in the journal, each
    that failed raised ``OSError`` and is not, and the chain verifies whole (no seq missing)."""
    j = Journal(journal_dir, durability="batch", checkpoint_key=None, checkpoint_every=25, checkpoint_interval=0)
    real_write = os.write
    calls = iter(range(1_000_000))

    def flaky(fd: int, data: bytes) -> int:
        n = next(calls)
        if n % 7 == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if n % 11 == 5:
            return real_write(fd, data[: len(data) // 3])  # a short write: a torn line, cut away
        return real_write(fd, data)

    monkeypatch.setattr(_journal, "_write", flaky)
    kept: list[tuple[int, str]] = []
    failed: list[int] = []
    lock = threading.Lock()

    def work(worker: int) -> None:
        for i in range(60):
            try:
                entry = j.append("capture", {"w": worker, "i": i})
            except OSError:
                with lock:
                    failed.append(worker)
                continue
            with lock:
                kept.append((entry.seq, entry.hash))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
    for each in threads:
        each.start()
    for each in threads:
        each.join(60)
    monkeypatch.setattr(_journal, "_write", real_write)
    j.close()
    assert failed and kept  # both happened
    records = sorted(iter_records(journal_dir), key=lambda r: r["seq"])
    on_disk = {(r["seq"], r["hash"]) for r in records if r["type"] == "capture"}
    assert set(kept) <= on_disk and len(on_disk) == len(kept)  # every kept one, nothing else
    report = verify(journal_dir)
    assert report.ok, report.problems
    tree = CompactRange()  # each checkpoint's Merkle root is the tree of the records written before it
    checkpoints = 0
    for record in records:
        if record["type"] == "checkpoint":
            checkpoints += 1
            assert record["attributes"][CHECKPOINT_ROOT] == tree.root().hex()
        tree.append(leaf_hash(bytes.fromhex(record["hash"])))
    assert checkpoints >= 3


def test_append_all_chains_records_together_in_one_write_or_fails_them(
    journal_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    j = Journal(journal_dir, durability="batch", checkpoint_key=None, checkpoint_every=4, checkpoint_interval=0)
    writes: list[int] = []
    real_write = os.write
    monkeypatch.setattr(
        _journal, "_write", lambda fd, data: (writes.append(data.count(b"\n")), real_write(fd, data))[1]
    )
    entries = j.append_all("read", [{"n": n} for n in range(6)])
    assert [e.seq for e in entries] == [1, 2, 3, 4, 5, 6] and entries[1].prev == entries[0].hash
    assert writes == [7]  # the six and the checkpoint they called for, in one write
    assert j.append_all("read", []) == []
    monkeypatch.setattr(_journal, "_write", lambda fd, data: real_write(fd, data[:10]))
    with pytest.raises(OSError, match="short write"):
        j.append_all("read", [{"n": 7}, {"n": 8}])
    monkeypatch.setattr(_journal, "_write", real_write)
    assert j.append("read", {"n": 9}).seq == 8  # the failed two are not in the chain
    j.close()
    assert [r["attributes"].get("n") for r in iter_records(journal_dir) if r["type"] == "read"] == [0, 1, 2, 3, 4, 5, 9]
    assert verify(journal_dir).ok


def test_torn_tail_of_a_dead_writer_is_reported_not_dropped(journal_dir: Path) -> None:
    j = Journal(journal_dir, durability="os", checkpoint_key=None, checkpoint_interval=0)
    for i in range(5):
        j.append("capture", {"i": i})
    j.close()
    (origin,) = list(journal_dir.iterdir())
    segment = sorted(origin.glob("*.jsonl"))[-1]
    with segment.open("ab") as fh:
        fh.write(b'{"v":1,"origin":"' + origin.name.encode() + b'","seq":7,"prev":"ab')  # crash mid-write
    report = verify(journal_dir)
    assert not report.ok
    (chain,) = report.origins
    assert chain.torn > 0 and chain.records == 6
    assert any("torn" in p for p in report.problems)
    # the next process never appends to the torn chain: it starts its own origin
    k = Journal(journal_dir, durability="os", checkpoint_key=None, checkpoint_interval=0)
    k.append("capture", {"i": 0})
    assert k.origin != origin.name
    k.close()
    assert len([r for r in iter_records(journal_dir) if r["origin"] == k.origin]) == 2


def test_threads_and_asyncio_share_one_chain(journal_dir: Path) -> None:
    j = Journal(journal_dir, durability="batch", checkpoint_key=None, checkpoint_every=50, checkpoint_interval=0)

    def work() -> None:
        for i in range(100):
            j.append("capture", {"i": i})

    async def main() -> None:
        async def task(n: int) -> None:
            j.append("capture", {"task": n})
            await asyncio.sleep(0)
            await asyncio.to_thread(j.append, "capture", {"task": n, "thread": True})

        await asyncio.gather(*(task(n) for n in range(50)))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    asyncio.run(main())
    for t in threads:
        t.join()
    j.close()
    report = verify(journal_dir)
    assert report.ok, report.problems
    seqs = [r["seq"] for r in iter_records(journal_dir)]
    assert seqs == list(range(1, len(seqs) + 1))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_child_starts_its_own_origin(journal_dir: Path) -> None:
    j = open_journal(journal_dir, durability="batch")
    j.append("capture", {"who": "parent"})
    parent_origin = j.origin
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            entry = j.append("capture", {"who": "child"})
            os.write(write, json.dumps([j.origin, entry.seq, entry.prev]).encode())
            j.close()
        except BaseException:
            code = 1
        os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    child_origin, child_seq, child_prev = json.loads(os.read(read, 4096))
    assert os.waitstatus_to_exitcode(status) == 0
    assert child_origin != parent_origin and (child_seq, child_prev) == (1, GENESIS)
    assert j.append("capture", {"who": "parent"}).seq == 2
    assert origin_is_live(journal_dir / parent_origin)
    assert not origin_is_live(journal_dir / child_origin)
    j.close()
    assert not origin_is_live(journal_dir / parent_origin)
    report = verify(journal_dir)
    assert report.ok, report.problems
    assert {o.origin for o in report.origins} == {parent_origin, child_origin}


def test_checkpoint_every_n_and_every_t(journal_dir: Path) -> None:
    j = Journal(journal_dir, durability="os", checkpoint_key=None, checkpoint_every=10, checkpoint_interval=0.05)
    for i in range(25):
        j.append("capture", {"i": i})
    types = [r["type"] for r in iter_records(journal_dir)]
    assert [i + 1 for i, t in enumerate(types) if t == "checkpoint"] == [11, 22]
    import time

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and [r["type"] for r in iter_records(journal_dir)][-1] != "checkpoint":
        time.sleep(0.02)
    assert [r["type"] for r in iter_records(journal_dir)][-1] == "checkpoint"  # the timer anchored the tail
    assert verify(journal_dir).ok
    j.close()


def test_unsigned_checkpoints_warn_once(journal_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_journal, "_warned_unsigned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for sub in ("a", "b"):
            j = Journal(journal_dir / sub, durability="os", checkpoint_key=None, checkpoint_interval=0)
            j.append("capture", {"i": 0})
            j.close()
    loom = [w for w in caught if issubclass(w.category, LoomOtelWarning)]
    assert len(loom) == 1 and "LOOM_OTEL_CHECKPOINT_KEY" in str(loom[0].message)
