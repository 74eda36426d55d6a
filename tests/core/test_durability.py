"""Durability (issue 15): a blob reaches the disk no later than the journal record naming it, and the
calling thread does not wait for either under ``batch``; ``force_flush`` waits for all of it."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from loom_otel.core import Envelope, FileReasoningStore, force_flush
from loom_otel.core._evidence import _durability
from loom_otel.core._evidence._journal import _writer as _journal
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.core._evidence._store import _file as _file_store
from loom_otel.core._evidence._store._protocol import DIGEST_KEY_NAME


def _is_ours(fd: int, root: Path | None) -> bool:
    """Whether ``fd`` is a file under ``root`` (every file when no root is given)."""
    if root is None:
        return True
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith(str(root))
    except OSError:
        return True


class _Log:
    """What was synced, in order, and on which thread."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, root: Path | None = None) -> None:
        self.events: list[tuple[str, bool]] = []
        main = threading.get_ident()
        real_sync, real_paths = _journal._sync, _file_store._sync_paths

        def note(what: str) -> None:
            self.events.append((what, threading.get_ident() == main))

        def ours(path: str) -> bool:  # other tests' stores may still be synced by their journals
            return root is None or Path(path).is_relative_to(root)

        def sync_paths(files: list[str], directories: list[str]) -> None:
            for path in (*files, *directories):
                if ours(path):
                    note(_kind(path))
            real_paths(files, directories)

        def sync(fd: int) -> None:
            if _is_ours(fd, root):  # other tests' journals may still sync in the background
                note("journal")
            real_sync(fd)

        def sync_directory(fd: int) -> None:
            if _is_ours(fd, root):
                note("journal-dir")
            real_sync_directory(fd)

        real_sync_directory = _journal._sync_directory
        monkeypatch.setattr(_file_store, "_sync_paths", sync_paths)
        monkeypatch.setattr(_journal, "_sync", sync)
        monkeypatch.setattr(_journal, "_sync_directory", sync_directory)

    def names(self) -> list[str]:
        return [name for name, _ in self.events]


def _kind(path: str) -> str:
    if path.endswith(".pack"):
        return "blob-file"
    if path.endswith(DIGEST_KEY_NAME):
        return f"key:{Path(path).parent.name}"
    return f"dir:{Path(path).name}"


def _capture(store: FileReasoningStore, journal: Journal, text: str, *, named: bool = True) -> str:
    ref = store.put(Envelope.seal(text, execution_id=f"exec-{text}", named=named))
    journal.append("capture", {"loom.reasoning.part.ref": [ref]})
    return ref


@pytest.mark.parametrize("named", [True, False], ids=["named", "shared"])
def test_batch_syncs_blobs_in_the_group_commit_before_their_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: bool
) -> None:
    """File by file, loom-otel's own only (issue 49: never a ``syncfs`` of the whole file system)."""
    log = _Log(monkeypatch, root=tmp_path)
    store = FileReasoningStore(tmp_path / "store")
    journal = Journal(tmp_path / "journal", durability="batch", checkpoint_key=None, checkpoint_interval=0)
    refs = [_capture(store, journal, f"thought {i}", named=named) for i in range(3)]
    assert not [e for e in log.events if e[1]], "nothing is synced on the calling thread under batch"
    assert force_flush(5000)
    names = log.names()
    assert names[0] != "journal" and names[-1] == "journal"
    if named:  # each new execution's pack, its directory and the blobs directory, then the records
        assert names.count("blob-file") == 3
        assert "dir:blobs" in names  # once per group that made a new execution's directory
        scopes = {ref.split("/")[0] for ref in refs}
        assert {n.removeprefix("dir:") for n in names if n.startswith("dir:")} == scopes | {"blobs"}
    else:  # the shards' packs, the shards, the packs directory and the root that got it, then the records
        shards = {_file_store.shard_of(ref.split("/")[0]) for ref in refs}
        assert len(shards) <= names.count("blob-file") <= len(refs)  # a shared pack once per group
        assert {n.removeprefix("dir:") for n in names if n.startswith("dir:")} == shards | {"packs", "store"}
    assert not [e for e in log.events if e[1]]
    for ref in refs:
        assert store.exists(ref)
    journal.close()
    store.close()


def test_a_segment_rotation_under_batch_leaves_its_syncs_to_the_group_commit_after_the_blobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 49, target 2: no calling thread waits on a device flush under ``batch``, a rotation's
    included; and the closed segment's records reach the disk after the blobs they name, never before."""
    log = _Log(monkeypatch, root=tmp_path)
    monkeypatch.setattr(_journal, "BATCH_WINDOW", 5.0)  # one group: the flush below takes it whole
    store = FileReasoningStore(tmp_path / "store")
    journal = Journal(
        tmp_path / "journal", durability="batch", checkpoint_key=None, checkpoint_interval=0, segment_records=2
    )
    for n in range(5):
        _capture(store, journal, f"rotated thought {n}")
    segments = sorted((tmp_path / "journal" / journal.origin).glob("*.jsonl"))
    assert len(segments) == 3  # two rotations on the calling thread
    assert not [e for e in log.events if e[1]], "nothing is synced on the calling thread under batch"
    flusher = threading.Thread(target=journal.flush)
    flusher.start()
    flusher.join(30)
    names = log.names()
    assert names.count("journal") == 3  # each closed segment, and the open one
    assert names.count("blob-file") == 5 and "journal-dir" in names  # the new segments' entries
    assert names.index("journal") > max(i for i, name in enumerate(names) if name == "blob-file")
    journal.close()
    store.close()


def test_a_new_digest_key_is_synced_by_the_group_commit_not_the_calling_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 49, target 2 (``hmac-sha256`` digests): the key a new execution gets is written on the calling
    thread and reaches the disk with the blobs, before the records, in the journal's group commit."""
    log = _Log(monkeypatch, root=tmp_path)
    store = FileReasoningStore(tmp_path / "store")
    journal = Journal(tmp_path / "journal", durability="batch", checkpoint_key=None, checkpoint_interval=0)
    key = store.digest_key("acme", "run-keyed", create=True)
    assert key is not None and store.digest_key("acme", "run-keyed") == key
    journal.append("capture", {"n": 1})
    assert not [e for e in log.events if e[1]], "nothing is synced on the calling thread under batch"
    flusher = threading.Thread(target=journal.flush)
    flusher.start()
    flusher.join(30)
    names = log.names()
    scope = next(n.removeprefix("key:") for n in names if n.startswith("key:"))
    assert {f"dir:{scope}", "dir:blobs"} <= set(names)
    assert names.index(f"key:{scope}") < names.index("journal")
    journal.close()
    store.close()


def test_a_digest_key_a_crash_left_short_is_made_again(tmp_path: Path) -> None:
    store = FileReasoningStore(tmp_path / "store")
    key = store.digest_key(None, "run-torn", create=True)
    assert key is not None
    (path,) = (tmp_path / "store" / "blobs").glob(f"*/{DIGEST_KEY_NAME}")
    path.write_bytes(b"")  # the key's link reached the disk, its bytes did not
    assert store.digest_key(None, "run-torn") is None
    again = store.digest_key(None, "run-torn", create=True)
    assert again is not None and len(again) == 32 and again != key and path.read_bytes() == again
    store.close()


def test_always_syncs_the_blob_on_the_calling_thread_before_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _Log(monkeypatch, root=tmp_path)
    store = FileReasoningStore(tmp_path / "store")
    journal = Journal(tmp_path / "journal", durability="always", checkpoint_key=None, checkpoint_interval=0)
    store.put(Envelope.seal("a thought", execution_id="e"))
    assert not [e for e in log.events if e[1]]  # written to the OS, not synced by the put
    journal.append("capture", {"n": 1})
    names = log.names()
    assert log.events[-1] == ("journal", True)  # the record is synced on the calling thread
    assert "blob-file" in names[:-1]  # after its blob (on this thread, unless a sync of another test took it first)
    journal.close()
    store.close()


def test_os_durability_syncs_at_force_flush(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _Log(monkeypatch, root=tmp_path)
    store = FileReasoningStore(tmp_path / "store")
    journal = Journal(tmp_path / "journal", durability="os", checkpoint_key=None, checkpoint_interval=0)
    _capture(store, journal, "x")
    assert log.events == []
    assert force_flush()
    names = log.names()
    assert names[0] == "blob-file" and names[-1] == "journal"
    journal.close()
    store.close()


def test_force_flush_reports_a_sync_that_does_not_finish_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real = _journal._sync
    monkeypatch.setattr(_journal, "_sync", lambda fd: (release.wait(10), real(fd)))
    journal = Journal(tmp_path / "journal", durability="os", checkpoint_key=None, checkpoint_interval=0)
    journal.append("capture", {"n": 1})
    try:
        assert force_flush(timeout_millis=50) is False
    finally:
        release.set()
    assert force_flush(timeout_millis=5000) is True
    journal.close()


def test_a_store_with_fsync_off_is_never_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _Log(monkeypatch, root=tmp_path)
    store = FileReasoningStore(tmp_path / "store", fsync=False)
    store.put(Envelope.seal("x", execution_id="e"))
    store.sync_pending()
    store.close()
    assert log.events == []


def test_a_store_whose_directory_is_gone_does_not_block_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    store = FileReasoningStore(tmp_path / "store")
    store.put(Envelope.seal("x", execution_id="e"))
    assert store._pool is not None and store._pool.wait_filled(10)  # not still making ready directories
    shutil.rmtree(tmp_path / "store")
    journal = Journal(tmp_path / "journal", durability="always", checkpoint_key=None, checkpoint_interval=0)
    journal.append("capture", {"n": 1})  # the gone store's pending blob went with its directory
    assert force_flush(5000)
    journal.close()
    store.close()


def test_unsynced_packs_are_bounded_when_no_journal_syncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _Log(monkeypatch, root=tmp_path)
    monkeypatch.setattr(_file_store, "_OPEN_PACKS", 1)
    monkeypatch.setattr(_file_store, "_PENDING_PACKS", 2)
    monkeypatch.setattr(_durability, "pending", lambda store: None)  # no journal (another test's) syncs it
    store = FileReasoningStore(tmp_path / "store")
    for n in range(3):
        store.put(Envelope.seal("x", execution_id=f"e{n}"))
    assert log.events == []  # two packs closed unsynced: still within the bound
    store.put(Envelope.seal("x", execution_id="e3"))
    assert "blob-file" in log.names() and all(on_caller for _, on_caller in log.events)  # the writer syncs them
    assert len(store._dirty) <= 2
    store.close()


def test_a_child_forked_during_a_sync_can_write_and_sync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    store = FileReasoningStore(tmp_path / "store")
    store.put(Envelope.seal("parent", execution_id="p"))
    syncing, release = threading.Event(), threading.Event()
    real = _file_store._sync_paths

    def slow(files: list[str], directories: list[str]) -> None:
        syncing.set()
        release.wait(10)
        real(files, directories)

    monkeypatch.setattr(_file_store, "_sync_paths", slow)
    parent_sync = threading.Thread(target=store.sync_pending)
    parent_sync.start()
    assert syncing.wait(10)  # another thread of the parent is inside a sync (holding its lock)
    pid = os.fork()
    if pid == 0:  # the child: its store must not wait for the parent's sync
        code = 1
        try:
            monkeypatch.setattr(_file_store, "_sync_paths", real)
            ref = store.put(Envelope.seal("child", execution_id="c"))
            store.sync_pending()
            code = 0 if store.get(ref, tenant=None, execution_id="c") == b"child" else 2
        finally:
            os._exit(code)
    release.set()
    parent_sync.join(10)
    deadline = time.monotonic() + 20
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung on a lock its parent's sync held")
    assert os.waitstatus_to_exitcode(done[1]) == 0
    store.close()


def _counting_system_calls(monkeypatch: pytest.MonkeyPatch, module: object) -> list[str]:
    """What ``module`` opens, duplicates or stats from now on (its ``os``, wrapped): each of them a system
    call that gives the interpreter up."""
    calls: list[str] = []

    def counted(name: str) -> Callable[..., object]:
        real = getattr(os, name)

        def call(first: object, *args: object, **kwargs: object) -> object:
            calls.append(f"{name} {os.fspath(first) if isinstance(first, (str, os.PathLike)) else first}")
            return real(first, *args, **kwargs)

        return call

    monkeypatch.setattr(module, "os", _OsWith(open=counted("open"), dup=counted("dup"), fstat=counted("fstat")))
    return calls


class _OsWith:
    """``os`` with some names replaced (for one module's ``os``)."""

    def __init__(self, **replaced: object) -> None:
        self._replaced = replaced

    def __getattr__(self, name: str) -> object:
        return self._replaced.get(name, getattr(os, name))


def test_a_flush_syncs_the_segment_its_records_were_in_after_a_rotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = Journal(tmp_path / "journal", durability="os", checkpoint_key=None, segment_records=2)
    journal.append("capture", {"n": 1})
    synced: list[int] = []
    real = _journal._sync

    def sync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real(fd)

    monkeypatch.setattr(_journal, "_sync", sync)
    first = (tmp_path / "journal" / journal.origin / "00000001.jsonl").stat().st_ino
    journal._sync_segment(1)  # open: its descriptor
    for n in range(3):
        journal.append("capture", {"n": n})  # the first segment closes (unsynced under ``os``)
    journal._sync_segment(1)  # closed since: by its path
    assert synced == [first, first]
    journal.close()


def test_flushing_a_closed_journal_whose_directory_is_gone_syncs_nothing(tmp_path: Path) -> None:
    import shutil

    journal = Journal(tmp_path / "journal", durability="batch", checkpoint_key=None)
    journal.append("capture", {"n": 1})
    journal.close()
    shutil.rmtree(tmp_path / "journal")
    journal.flush()  # its records were synced at close; nothing is opened again
    assert force_flush(5000)


def test_a_sync_visits_only_the_stores_with_writes_pending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process's idle stores (or ones its owner dropped, kept only by a cycle until a collection) cost a
    journal's group commit nothing: it visits the stores written to since their last sync, once."""
    visited: list[str] = []
    real = FileReasoningStore.sync_pending
    _durability.sync_dependents()  # what earlier tests left pending is not this test's

    def counted(store: FileReasoningStore) -> None:
        if store.root.parent == tmp_path:  # this test's stores only
            visited.append(store.root.name)
        real(store)

    monkeypatch.setattr(FileReasoningStore, "sync_pending", counted)
    idle = [FileReasoningStore(tmp_path / f"idle{n}") for n in range(20)]
    for store in idle:
        store.put(Envelope.seal("x", execution_id="e"))
    _durability.sync_dependents()
    assert sorted(visited) == sorted(s.root.name for s in idle)  # each written once: each synced once
    visited.clear()
    busy = FileReasoningStore(tmp_path / "busy")
    busy.put(Envelope.seal("y", execution_id="e"))
    _durability.sync_dependents()
    _durability.sync_dependents()  # nothing written since
    assert visited == ["busy"]
    for store in [*idle, busy]:
        store.close()
