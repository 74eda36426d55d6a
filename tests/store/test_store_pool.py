"""Ready scope directories (issue 15): a new named execution's directory and pack are made in the background
and renamed into place, so a new ``execution()`` per conversation does not pay ``mkdir`` + ``open(O_CREAT)``
on the calling thread; the layout, erasure, durability and fork rules of ``FileReasoningStore`` are
unchanged. (Executions loom-otel names itself make no directory at all: ``test_store_shards.py``.)"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from loom_otel.core import Envelope, FileReasoningStore, ReasoningConfig, execution
from loom_otel.core._evidence._store import _file as _file_store
from loom_otel.core._evidence._store._pool import POOL_PREFIX, POOLS
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES
from tests.support.forking import fork_runs

CANARY = "CANARY-pool-9b41"


def _warm(store: FileReasoningStore, execution_id: str = "warm-up") -> str:
    """Write one new execution (which starts the pool) and wait until the pool is full; its directory."""
    store.put(Envelope.seal("warm-up", execution_id=execution_id))
    pool = store._pool
    assert pool is not None and pool.wait_filled(10)
    return pool.directory


def _pools(root: Path) -> list[Path]:
    pools = root / "blobs" / POOLS
    return sorted(p for p in pools.iterdir() if p.name.startswith(POOL_PREFIX)) if pools.is_dir() else []


def _scope_dirs(root: Path) -> list[Path]:
    return sorted(p for p in (root / "blobs").iterdir() if not p.name.startswith("."))


def _calling_thread_creates(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ``mkdir`` and ``open(O_CREAT)`` the calling thread makes from now on (other threads' are not)."""
    me, seen = threading.get_ident(), []
    real_mkdir, real_open = os.mkdir, os.open

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if threading.get_ident() == me:
            seen.append(f"mkdir {path}")
        real_mkdir(path, *args, **kwargs)

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if threading.get_ident() == me and flags & os.O_CREAT:
            seen.append(f"open {path}")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)
    return seen


def test_new_executions_take_ready_directories_and_make_nothing_on_the_calling_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    pool_dir = _warm(store)
    assert store._pool is not None
    made = _calling_thread_creates(monkeypatch)
    refs = [store.put(Envelope.seal(f"thought {n}", execution_id=f"e{n}")) for n in range(store._pool._size)]
    assert made == []
    monkeypatch.undo()
    reader = FileReasoningStore(root)  # another process's view
    for n, ref in enumerate(refs):
        assert reader.get(ref, tenant=None, execution_id=f"e{n}") == f"thought {n}".encode()
        (pack,) = (root / "blobs" / ref.split("/")[0]).iterdir()  # the ready pack, renamed with its directory
        assert pack.name.startswith(f"{os.getpid()}-") and pack.suffix == ".pack"
        assert oct(pack.stat().st_mode & 0o777) == oct(0o600)
        assert oct(pack.parent.stat().st_mode & 0o777) == oct(0o700)
    assert _pools(root) == [Path(pool_dir)]  # the reader made none: it wrote nothing
    store.close()


def test_a_burst_that_empties_the_pool_falls_back_and_grows_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileReasoningStore(tmp_path / "s")
    _warm(store)
    pool = store._pool
    assert pool is not None
    size, make, release = pool._size, pool._make, threading.Event()

    def held_back() -> Any:
        release.wait(10)
        return make()

    monkeypatch.setattr(pool, "_make", held_back)
    # Nothing is refilled while the burst runs: past the pool, mkdir on the calling thread.
    refs = [store.put(Envelope.seal("burst", execution_id=f"b{n}")) for n in range(size + 3)]
    assert len(pool._ready) == 0
    release.set()
    assert all(store.get(ref, tenant=None, execution_id=f"b{n}") == b"burst" for n, ref in enumerate(refs))
    assert pool.wait_filled(10) and pool._size == 2 * size
    store.close()


def test_two_writers_on_one_execution_both_keep_their_blobs(tmp_path: Path) -> None:
    root = tmp_path / "s"
    first, second = FileReasoningStore(root), FileReasoningStore(root)
    _warm(first, "w1")
    _warm(second, "w2")
    one = first.put(Envelope.seal("from the first writer", execution_id="shared"))
    pool = second._pool
    assert pool is not None
    ready = len(pool._ready)
    two = second.put(Envelope.seal("from the second writer", execution_id="shared"))  # the directory exists
    assert len(pool._ready) == ready  # its ready entry went back to the pool
    same = second.put(Envelope.seal("from the first writer", execution_id="shared"))
    assert same == one  # the existing directory was indexed: content-addressed across writers
    for store in (first, second, FileReasoningStore(root)):
        assert store.get(one, tenant=None, execution_id="shared") == b"from the first writer"
        assert store.get(two, tenant=None, execution_id="shared") == b"from the second writer"
    packs = sorted(p.stat().st_size > 0 for p in (root / "blobs" / one.split("/")[0]).iterdir())
    assert packs == [True, True]  # one pack per writer, nothing written twice
    first.close()
    second.close()


def test_an_earlier_runs_execution_is_indexed_not_replaced(tmp_path: Path) -> None:
    root = tmp_path / "s"
    earlier = FileReasoningStore(root)
    old = earlier.put(Envelope.seal("yesterday", execution_id="e"))
    earlier.close()
    store = FileReasoningStore(root)
    _warm(store)
    new = store.put(Envelope.seal("today", execution_id="e"))
    assert store.put(Envelope.seal("yesterday", execution_id="e")) == old
    assert store.get(old, tenant=None, execution_id="e") == b"yesterday"
    assert store.get(new, tenant=None, execution_id="e") == b"today"
    store.close()


def test_erasure_after_pooled_writes(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    _warm(store)
    refs = [store.put(Envelope.seal(f"text {n}", execution_id="e")) for n in range(3)]
    other = store.put(Envelope.seal("other", execution_id="f"))
    assert FileReasoningStore(root).erase_execution(None, "e") == 3  # another process, under the open pack
    assert not (root / "blobs" / refs[0].split("/")[0]).exists()
    assert all(store.get(ref, tenant=None, execution_id="e") is None for ref in refs)
    again = store.put(Envelope.seal("after the erasure", execution_id="e"))  # racing it: kept
    assert FileReasoningStore(root).get(again, tenant=None, execution_id="e") == b"after the erasure"
    assert store.erase_execution(None, "f") == 1 and store.get(other, tenant=None, execution_id="f") is None
    assert len(_pools(root)) == 1  # erasure never touches the pool
    store.close()


def test_a_dead_writers_pool_is_swept_and_a_live_ones_is_kept(tmp_path: Path) -> None:
    root = tmp_path / "s"
    live = FileReasoningStore(root)
    live_pool = Path(_warm(live))
    dead = root / "blobs" / POOLS / f"{POOL_PREFIX}4242-0123456789ab"
    (dead / "0011223344556677").mkdir(parents=True)
    (dead / "0011223344556677" / "4242-0123456789ab.pack").write_bytes(b"")
    FileReasoningStore(root)  # the next process: one listdir, every unlocked pool removed
    assert not dead.exists()
    assert live_pool.is_dir() and len(list(live_pool.iterdir())) >= 1
    live.close()


def test_a_pool_being_made_is_not_lost_to_a_sweeper(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    real_mkdir, swept = os.mkdir, []

    def mkdir_then_sweep(path: Any, *args: Any, **kwargs: Any) -> None:
        real_mkdir(path, *args, **kwargs)
        if Path(path).name.startswith(POOL_PREFIX) and not swept:  # a sweeper runs before the lock is taken
            swept.append(path)
            FileReasoningStore(root)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "mkdir", mkdir_then_sweep)
        pool_dir = Path(_warm(store))
    assert swept and Path(swept[0]) != pool_dir and not Path(swept[0]).exists()
    fd = os.open(pool_dir, os.O_RDONLY)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the pool in use is locked
    finally:
        os.close(fd)
    store.close()


def test_close_removes_the_pool_and_a_later_put_starts_another(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    first = Path(_warm(store))
    store.close()
    assert not first.exists() and _pools(root) == []
    ref = store.put(Envelope.seal("after close", execution_id="later"))
    assert store.get(ref, tenant=None, execution_id="later") == b"after close"
    second = Path(_warm(store, "later still"))
    assert second != first and second.is_dir()
    store.close()
    assert _pools(root) == []


def test_a_store_dropped_without_close_removes_its_pool(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    pool_dir = Path(_warm(store))
    del store
    assert not pool_dir.exists()


def test_a_forked_child_makes_its_own_pool_and_leaves_its_parents_alone(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    pool_dir = Path(_warm(store))
    before = sorted(p.name for p in pool_dir.iterdir())

    def child() -> None:
        assert store._pool is None  # the parent's was forgotten at the fork
        refs = [store.put(Envelope.seal(f"child {n}", execution_id=f"c{n}")) for n in range(5)]
        child_pool = store._pool
        assert child_pool is not None and child_pool.wait_filled(10)
        assert Path(child_pool.directory) != pool_dir
        assert Path(child_pool.directory) in _pools(root)
        refs += [store.put(Envelope.seal(f"child {n}", execution_id=f"c{n}")) for n in range(5, 10)]
        assert all(store.get(r, tenant=None, execution_id=f"c{n}") == f"child {n}".encode() for n, r in enumerate(refs))
        store.close()

    fork_runs(child)
    assert sorted(p.name for p in pool_dir.iterdir()) == before  # untouched by the child
    assert _pools(root) == [pool_dir]  # the child's own was removed at its close
    reader = FileReasoningStore(root)
    assert all(
        reader.get(Envelope.seal(f"child {n}", execution_id=f"c{n}").ref, tenant=None, execution_id=f"c{n}")
        for n in range(10)
    )
    assert pool_dir.is_dir()  # the parent is alive: its pool is not swept
    ref = store.put(Envelope.seal("parent", execution_id="p"))  # and still usable, descriptors included
    assert reader.get(ref, tenant=None, execution_id="p") == b"parent"
    (pack,) = (root / "blobs" / ref.split("/")[0]).iterdir()
    assert pack.name.startswith(f"{os.getpid()}-")
    store.close()


def test_fsync_syncs_the_renamed_paths_by_the_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "s"
    synced: list[str] = []
    real = _file_store._sync_paths
    monkeypatch.setattr(
        _file_store, "_sync_paths", lambda files, dirs: (synced.extend([*files, *dirs]), real(files, dirs))
    )
    store = FileReasoningStore(root)
    _warm(store)
    store.sync_pending()
    synced.clear()
    refs = [store.put(Envelope.seal(f"t{n}", execution_id=f"e{n}")) for n in range(3)]
    assert synced == []  # written to the OS, not synced on the calling thread
    store.sync_pending()
    scopes = {root / "blobs" / ref.split("/")[0] for ref in refs}
    packs = {pack for scope in scopes for pack in scope.iterdir()}
    assert {Path(p) for p in synced} == packs | scopes | {root / "blobs"}  # where they are now, not the pool
    assert synced[-1] == str(root / "blobs")  # the blobs directory last
    assert not store._dirty and not store._dirty_dirs
    store.close()


def test_a_failing_pool_never_reaches_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    real_mkdir = os.mkdir

    def no_pools(path: Any, *args: Any, **kwargs: Any) -> None:
        if Path(path).name.startswith(POOL_PREFIX):
            raise PermissionError(13, "Permission denied", str(path))
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", no_pools)
    with caplog.at_level(logging.WARNING, logger="loom_otel.core._evidence._store._pool"):
        first = store.put(Envelope.seal("one", execution_id="e1"))
        pool = store._pool
        assert pool is not None
        pool._thread.join(10)
        assert pool.failed_at is not None
        refs = [store.put(Envelope.seal("more", execution_id=f"m{n}")) for n in range(3)]
    assert "no ready reasoning scope directories" in caplog.text
    assert store._pool is pool  # not retried on every call
    assert store.get(first, tenant=None, execution_id="e1") == b"one"
    assert all(store.get(r, tenant=None, execution_id=f"m{n}") == b"more" for n, r in enumerate(refs))
    assert _pools(root) == []
    store.close()


def test_new_named_conversations_through_the_sdk_leak_nothing_and_pool_entries_hold_no_text(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "store"
    store = FileReasoningStore(root)
    pool_dir = Path(_warm(store))
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}")
    settings = ReasoningConfig(store=store, journal=tmp_path / "journal")
    kw = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": {"type": "adaptive"}}
    with caplog.at_level(logging.DEBUG), instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        for n in range(4):  # a new named conversation per call: a new scope directory each
            with execution(f"conversation-{n}"):
                MODES["sync"](sim, {**kw, "messages": [{"role": "user", "content": f"question {n}"}]})
    captured = reasoning_events(telemetry.spans)
    executions = {e["loom.execution.id"] for e in captured}
    assert len(captured) == 4 and len(executions) == 4
    assert len(_scope_dirs(root)) == 5  # the warm-up's and one per conversation
    assert (
        find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path / "journal", pool_dir], texts=[caplog.text])
        == []
    )
    assert all(p.stat().st_size == 0 for p in pool_dir.rglob("*.pack"))
    assert find_leaks([CANARY], directories=[root]) != []  # the text is kept, in the conversations' packs
    store.close()


def _shared(text: str, execution_id: str) -> Envelope:
    return Envelope.seal(text, execution_id=execution_id, named=False)


def _ready_packs(root: Path) -> list[Path]:
    return sorted(p for pool in _pools(root) for p in pool.glob("*.pack"))


def test_a_fresh_writer_of_new_conversations_renames_ready_packs_into_the_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    store.put(_shared("first", "first"))  # its shard's pack is opened here; the pool is asked for the rest
    pool = store._pool
    assert pool is not None and pool.wait_filled(30)
    assert len(_ready_packs(root)) == 63 and pool._ready == []  # a pack per shard still without one, no directory
    creates = _calling_thread_creates(monkeypatch)
    refs = {f"e{n}": store.put(_shared(f"text {n}", f"e{n}")) for n in range(2000)}  # every shard gets one
    assert creates == []  # no open(O_CREAT), no mkdir: one rename per new shard
    packs = sorted((root / "packs").rglob("*.pack"))
    assert len(packs) == 64 and {p.parent.name for p in packs} == {f"{n:02x}" for n in range(64)}
    assert all(oct(p.stat().st_mode & 0o777) == oct(0o600) and p.stat().st_size > 0 for p in packs)
    assert _ready_packs(root) == []
    reader = FileReasoningStore(root)  # another process's view
    for n, (execution_id, ref) in enumerate(refs.items()):
        assert reader.get(ref, tenant=None, execution_id=execution_id) == f"text {n}".encode()


def test_ready_packs_nobody_took_are_removed_at_close(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    for n in range(3):
        store.put(_shared(f"text {n}", f"e{n}"))
    pool = store._pool
    assert pool is not None and pool.wait_filled(30) and _ready_packs(root) != []
    store.close()
    assert _pools(root) == [] and all(p.stat().st_size > 0 for p in (root / "packs").rglob("*.pack"))
    store.put(_shared("after close", "e9"))  # a later put starts another pool, asked again
    assert store._pool is not None and store._pool is not pool and store._pool.wait_filled(30)
    store.close()


def test_a_forked_child_never_takes_its_parents_ready_packs(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    store.put(_shared("parent", "parent"))
    pool = store._pool
    assert pool is not None and pool.wait_filled(30)
    ready = set(Path(pool.directory).glob("*.pack"))
    assert len(ready) == 63

    def child() -> None:
        for n in range(200):
            store.put(_shared(f"child {n}", f"c{n}"))
        mine = [p for p in (root / "packs").rglob("*.pack") if p.name.startswith(f"{os.getpid()}-")]
        assert len(mine) > 1 and all(p.stat().st_size > 0 for p in mine)

    fork_runs(child)
    assert set(Path(pool.directory).glob("*.pack")) == ready  # the parent's stay in its pool, for the parent
    store.close()


def test_a_record_in_a_renamed_pack_is_synced_with_its_directory_and_erased_in_place(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)  # fsync on: what is not synced yet is remembered by path
    first = store.put(_shared("first", "first"))
    pool = store._pool
    assert pool is not None and pool.wait_filled(30)
    store.sync_pending()
    ref = store.put(_shared(f"{CANARY} renamed", "second"))
    assert _shard(ref) != _shard(first)  # its shard had no pack of this writer: a ready one was renamed there
    (pack,) = [p for p in (root / "packs").rglob("*.pack") if p.parent.name == _shard(ref)]
    assert str(pack) in store._dirty and {str(pack.parent), str(root / "packs")} <= store._dirty_dirs
    store.sync_pending()
    assert not store._dirty and not store._dirty_dirs
    assert FileReasoningStore(root).get(ref, tenant=None, execution_id="second") == f"{CANARY} renamed".encode()
    assert FileReasoningStore(root).erase_execution(None, "second") == 1
    assert find_leaks([CANARY], directories=[root]) == []
    assert store.get(ref, tenant=None, execution_id="second") is None
    store.close()


def _shard(ref: str) -> str:
    return _file_store.shard_of(ref.split("/")[0])


def test_a_ready_pack_that_cannot_be_renamed_is_removed_and_the_record_still_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    first = store.put(_shared("first", "first"))
    pool = store._pool
    assert pool is not None and pool.wait_filled(30)
    ready = len(_ready_packs(root))

    def cross_device(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        raise OSError(18, "Invalid cross-device link")  # packs/ on another file system than blobs/.pools

    monkeypatch.setattr(os, "rename", cross_device)
    ref = store.put(_shared("second", "second"))  # a shard without this writer's pack: opened here instead
    monkeypatch.undo()
    assert _shard(ref) != _shard(first)
    assert len(_ready_packs(root)) == ready - 1  # the one taken is gone, not left in the pool
    assert FileReasoningStore(root).get(ref, tenant=None, execution_id="second") == b"second"
    store.close()
