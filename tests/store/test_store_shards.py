"""Shared packs (issue 15): an execution loom-otel names itself (a new conversation without
``execution()``) makes no directory: its blobs go to this writer's pack in one of 64 shards, so a new
conversation per call costs the same ``writev`` as a continuing one. Reads and erasure find them from any
process; erasure overwrites the records in place, so no text is left in any file."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from loom_otel.audit import erase_execution, read_reasoning
from loom_otel.core import Envelope, FileReasoningStore, ReasoningConfig
from loom_otel.core._evidence._journal._checkpoint import generate_key
from loom_otel.core._evidence._store import _file as _file_store
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES
from tests.support.forking import fork_runs

CANARY = "CANARY-shard-5d07"


def _shared(text: str, execution_id: str, tenant: str | None = None) -> Envelope:
    return Envelope.seal(text, execution_id=execution_id, tenant=tenant, named=False)


def _scope_dirs(root: Path) -> list[Path]:
    blobs = root / "blobs"
    return sorted(p for p in blobs.iterdir() if not p.name.startswith(".")) if blobs.is_dir() else []


def _packs(root: Path) -> list[Path]:
    return sorted((root / "packs").rglob("*.pack"))


def test_executions_loom_otel_named_make_no_directory_and_read_from_another_process(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    refs = {f"e{n}": store.put(_shared(f"text {n}", f"e{n}")) for n in range(200)}
    assert _scope_dirs(root) == []
    packs = _packs(root)
    assert 0 < len(packs) <= 64 and {p.parent.name for p in packs} <= {f"{n:02x}" for n in range(64)}
    assert all(oct(p.stat().st_mode & 0o777) == oct(0o600) for p in packs)
    assert store._pool is not None and store._pool._ready == []  # no scope directory made ahead, packs only
    reader = FileReasoningStore(root)  # another process's view: indexes the shards from disk
    for n, (execution_id, ref) in enumerate(refs.items()):
        assert reader.get(ref, tenant=None, execution_id=execution_id) == f"text {n}".encode()
        assert reader.get(ref, tenant=None, execution_id="someone-else") is None
    assert store.put(_shared("text 0", "e0")) == refs["e0"]  # the writer's own record: nothing new
    assert sum(p.stat().st_size for p in _packs(root)) == sum(p.stat().st_size for p in packs)


def test_a_new_conversation_per_put_is_known_by_ref_alone_and_read_back_without_a_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer indexes no scope for the shared records it writes (one entry per record, bounded): its
    own records read back from where it wrote them, without looking through the shard."""
    monkeypatch.setattr(_file_store, "_WRITTEN", 50)
    store = FileReasoningStore(tmp_path / "s")
    refs = [store.put(_shared(f"text {n}", f"e{n}")) for n in range(120)]
    assert store._scopes == {} and len(store._written) == 50
    listed = []
    real = os.listdir

    def listing(path: Any) -> list[str]:
        listed.append(path)
        return real(path)

    monkeypatch.setattr(_file_store.os, "listdir", listing)
    assert all(store.get(refs[n], tenant=None, execution_id=f"e{n}") == f"text {n}".encode() for n in range(70, 120))
    assert listed == [] and store._scopes == {}
    assert store.get(refs[0], tenant=None, execution_id="e0") == b"text 0"  # dropped: indexed from disk
    assert listed != []


def test_a_shared_record_erased_by_another_process_is_written_again_by_its_writer(tmp_path: Path) -> None:
    writer, eraser = FileReasoningStore(tmp_path / "s"), FileReasoningStore(tmp_path / "s")
    ref = writer.put(_shared(CANARY, "erased-twice"))
    assert eraser.erase_execution(None, "erased-twice") == 1
    assert writer.put(_shared(CANARY, "erased-twice")) == ref  # not taken for kept: its record was erased
    assert eraser.get(ref, tenant=None, execution_id="erased-twice") == CANARY.encode()
    assert eraser.erase_execution(None, "erased-twice") == 1
    assert writer.get(ref, tenant=None, execution_id="erased-twice") is None
    assert writer.put(_shared(CANARY, "erased-twice")) == ref
    writer.erase_execution(None, "erased-twice")
    assert writer._written == {} and writer.get(ref, tenant=None, execution_id="erased-twice") is None
    assert find_leaks([CANARY], directories=[tmp_path]) == []


def test_a_new_execution_per_put_makes_nothing_on_the_calling_thread_once_the_shards_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileReasoningStore(tmp_path / "s")
    for n in range(2000):  # every shard gets this writer's pack
        store.put(_shared("warm", f"warm-{n}"))
    assert len(_packs(tmp_path / "s")) == 64
    me, seen = threading.get_ident(), []
    real_mkdir, real_open, real_rename = os.mkdir, os.open, os.rename

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(f"mkdir {path}") if threading.get_ident() == me else None
        real_mkdir(path, *args, **kwargs)

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        seen.append(f"open {path}") if threading.get_ident() == me else None
        return real_open(path, flags, *args, **kwargs)

    def rename(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(f"rename {src}") if threading.get_ident() == me else None
        real_rename(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "rename", rename)
    refs = [store.put(_shared(f"new {n}", f"new-{n}")) for n in range(100)]
    assert seen == []
    monkeypatch.undo()
    assert all(store.get(r, tenant=None, execution_id=f"new-{n}") == f"new {n}".encode() for n, r in enumerate(refs))


@pytest.mark.parametrize("eraser", ["writer", "another process"])
def test_erasure_overwrites_the_records_in_place_and_keeps_the_shard_neighbours(tmp_path: Path, eraser: str) -> None:
    root = tmp_path / "s"
    writer = FileReasoningStore(root)
    victim = "victim"
    scope = _file_store.scope_of(None, victim)
    neighbours = [
        f"n{n}"
        for n in range(400)
        if _file_store.shard_of(_file_store.scope_of(None, f"n{n}")) == _file_store.shard_of(scope)
    ]
    assert neighbours, "some executions share the victim's shard"
    before = writer.put(_shared("neighbour before", neighbours[0]))
    gone = [writer.put(_shared(f"{CANARY} {n}", victim)) for n in range(3)]
    after = writer.put(_shared("neighbour after", neighbours[-1]))
    stale = FileReasoningStore(root)  # another process that read the blob before the erasure
    assert stale.get(gone[0], tenant=None, execution_id=victim) == f"{CANARY} 0".encode()
    erasing = writer if eraser == "writer" else FileReasoningStore(root)
    assert erasing.erase_execution(None, victim) == 3
    assert erasing.erase_execution(None, victim) == 0
    assert find_leaks([CANARY], directories=[root]) == []
    for store in (writer, stale, FileReasoningStore(root)):
        assert all(store.get(r, tenant=None, execution_id=victim) is None for r in gone)
        assert not any(store.exists(r) for r in gone)
        assert store.get(before, tenant=None, execution_id=neighbours[0]) == b"neighbour before"
        assert store.get(after, tenant=None, execution_id=neighbours[-1]) == b"neighbour after"
    again = writer.put(_shared(f"{CANARY} 0", victim))  # captured again after the erasure: kept again
    assert again == gone[0] and FileReasoningStore(root).get(again, tenant=None, execution_id=victim) is not None


def test_erasure_removes_an_execution_kept_in_both_places(tmp_path: Path) -> None:
    """A named execution whose conversation went on without ``execution()`` (its later calls joined it by
    their history) has blobs in its directory and in its shard: reads find both, erasure removes both."""
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    named = store.put(Envelope.seal(f"{CANARY} named", execution_id="e", tenant="t"))
    joined = store.put(_shared(f"{CANARY} joined", "e", tenant="t"))
    reader = FileReasoningStore(root)
    assert reader.get(named, tenant="t", execution_id="e") == f"{CANARY} named".encode()
    assert reader.get(joined, tenant="t", execution_id="e") == f"{CANARY} joined".encode()
    assert reader.erase_execution("t", "e") == 2
    assert find_leaks([CANARY], directories=[root]) == []
    assert (
        store.get(named, tenant="t", execution_id="e") is None
        and store.get(joined, tenant="t", execution_id="e") is None
    )


def test_delete_erases_one_shared_record(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    keep = store.put(_shared("keep", "e"))
    gone = store.put(_shared(CANARY, "e"))
    FileReasoningStore(root).delete(gone)
    assert store.get(gone, tenant=None, execution_id="e") is None and not store.exists(gone)
    assert store.get(keep, tenant=None, execution_id="e") == b"keep"
    assert find_leaks([CANARY], directories=[root]) == []


def test_a_read_that_misses_finds_another_writers_records_of_the_same_execution(tmp_path: Path) -> None:
    """Two processes on one execution (the second joined it by the history): each reads the other's."""
    root = tmp_path / "s"
    first, second = FileReasoningStore(root), FileReasoningStore(root)
    mine = first.put(_shared("first's", "e"))
    theirs = second.put(_shared("second's", "e"))
    assert first.get(theirs, tenant=None, execution_id="e") == b"second's"
    assert second.get(mine, tenant=None, execution_id="e") == b"first's"


def test_a_torn_shared_tail_is_never_read_and_erased_records_are_skipped(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    scope = _file_store.scope_of(None, "a")
    same_shard = next(
        f"b{n}"
        for n in range(1000)
        if _file_store.shard_of(_file_store.scope_of(None, f"b{n}")) == _file_store.shard_of(scope)
    )
    erased = store.put(_shared("erased", "a"))
    kept = store.put(_shared("kept", same_shard))
    torn = _shared("torn by a crash", same_shard)
    store.put(torn)
    store.erase_execution(None, "a")
    (pack,) = _packs(root)
    pack.write_bytes(pack.read_bytes()[:-4])  # the crash cut the last record
    fresh = FileReasoningStore(root)  # the next process: reads past the erased record, stops at the tail
    assert fresh.get(kept, tenant=None, execution_id=same_shard) == b"kept"
    assert fresh.get(torn.ref, tenant=None, execution_id=same_shard) is None
    assert fresh.get(erased, tenant=None, execution_id="a") is None
    assert fresh.put(torn) == torn.ref  # lands whole in a new pack
    assert FileReasoningStore(root).get(torn.ref, tenant=None, execution_id=same_shard) == b"torn by a crash"


@pytest.mark.parametrize("mode", list(MODES))
def test_new_conversations_through_the_sdk_make_no_directory_leak_nothing_and_erase(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    generate_key(tmp_path / "checkpoint.pem")  # signed checkpoints: the reader trusts the deployment's key,
    monkeypatch.setenv("LOOM_OTEL_CHECKPOINT_KEY", str(tmp_path / "checkpoint.pem"))  # so tombstones count
    root = tmp_path / "store"
    store = FileReasoningStore(root)
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}")
    settings = ReasoningConfig(store=store, journal=tmp_path / "journal")
    kw = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": {"type": "adaptive"}}
    with caplog.at_level(logging.DEBUG), instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        for n in range(4):  # a new conversation per call: a new execution each, named by its trace id
            MODES[mode](sim, {**kw, "messages": [{"role": "user", "content": f"question {n}"}]})
        assert store._pool is not None and store._pool._ready == []  # (uninstrument closes the pool)
    captured = reasoning_events(telemetry.spans)
    executions = sorted({e["loom.execution.id"] for e in captured})
    assert len(captured) == 4 and len(executions) == 4
    assert _scope_dirs(root) == []
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path / "journal"], texts=[caplog.text]) == []
    assert find_leaks([CANARY], directories=[root]) != []  # kept, in the shared packs
    reader = FileReasoningStore(root)
    for execution_id in executions:
        (step,) = read_reasoning(tmp_path / "journal", reader, execution_id=execution_id).steps
        assert [p.status for p in step.received.parts] == ["ok"]
    for execution_id in executions:
        assert erase_execution(reader, None, execution_id, journal=tmp_path / "journal").blobs_removed == 1
    assert find_leaks([CANARY], directories=[root]) == []
    for execution_id in executions:
        (step,) = read_reasoning(tmp_path / "journal", store, execution_id=execution_id).steps
        assert [p.status for p in step.received.parts] == ["erased"]


def test_erasing_while_another_writer_appends_to_the_same_shard_pack(tmp_path: Path) -> None:
    """An eraser overwrites records in a pack another writer keeps appending to: the appends stay whole,
    the neighbours' records stay readable, and an erasure after the last append leaves no text."""
    root = tmp_path / "s"
    writer, eraser = FileReasoningStore(root), FileReasoningStore(root)
    victim = "victim"
    shard = _file_store.shard_of(_file_store.scope_of(None, victim))
    neighbour = next(f"n{n}" for n in range(1000) if _file_store.shard_of(_file_store.scope_of(None, f"n{n}")) == shard)
    kept: list[tuple[str, bytes]] = []
    stop = threading.Event()

    def erase() -> None:
        while not stop.is_set():
            eraser.erase_execution(None, victim)

    thread = threading.Thread(target=erase)
    thread.start()
    try:
        for n in range(300):
            writer.put(_shared(f"{CANARY} {n}", victim))
            text = f"neighbour {n}".encode()
            kept.append((writer.put(_shared(text.decode(), neighbour)), text))
    finally:
        stop.set()
        thread.join()
    eraser.erase_execution(None, victim)
    assert find_leaks([CANARY], directories=[root]) == []
    reader = FileReasoningStore(root)
    assert all(reader.get(ref, tenant=None, execution_id=neighbour) == text for ref, text in kept)
    assert all(writer.get(ref, tenant=None, execution_id=neighbour) == text for ref, text in kept)


def test_a_scope_dropped_from_the_index_is_read_again_from_its_first_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-running writer's pack in a shard holds every conversation since it started: a conversation
    dropped from the in-memory index and read again is indexed from its own first record on, not from
    the start of the pack."""
    monkeypatch.setattr(_file_store, "_KNOWN_SCOPES", 4)
    monkeypatch.setattr(_file_store, "_WRITTEN", 4)
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    shard = _file_store.shard_of(_file_store.scope_of(None, "resumed"))
    others = [f"o{n}" for n in range(20000) if _file_store.shard_of(_file_store.scope_of(None, f"o{n}")) == shard]
    for execution_id in others[:200]:  # earlier conversations in the same pack
        store.put(_shared("earlier", execution_id))
    first = store.put(_shared("first turn", "resumed"))
    for execution_id in others[200:210]:  # enough later ones to drop "resumed" from the index
        store.put(_shared("later", execution_id))
    assert first not in store._written and _file_store.scope_of(None, "resumed") in store._bookmarks
    frames = 0
    real = _file_store._records

    def counted(fd: int, offset: int, size: int, **options: Any) -> Any:
        nonlocal frames
        for record in real(fd, offset, size, **options):
            frames += 1
            yield record

    monkeypatch.setattr(_file_store, "_records", counted)
    assert store.get(first, tenant=None, execution_id="resumed") == b"first turn"
    assert frames <= 11, f"{frames} frames read"  # its own record and the ten after it
    second = store.put(_shared("second turn", "resumed"))
    assert FileReasoningStore(root).get(second, tenant=None, execution_id="resumed") == b"second turn"
    store.erase_execution(None, "resumed")
    assert store.get(first, tenant=None, execution_id="resumed") is None


def test_a_forked_child_appends_to_packs_of_its_own_and_each_process_reads_and_erases_the_others(
    tmp_path: Path,
) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root)
    parent_ref = store.put(_shared("parent's", "shared-conversation"))  # the parent's shard pack is open
    child_ref = _shared(f"child's {CANARY}", "shared-conversation").ref  # content-addressed: known here too

    def child() -> None:
        assert store.put(_shared(f"child's {CANARY}", "shared-conversation")) == child_ref
        assert store.get(parent_ref, tenant=None, execution_id="shared-conversation") == b"parent's"

    fork_runs(child)
    writers = sorted(p.name.split("-")[0] for p in _packs(root))
    assert len(writers) == 2 and writers.count(str(os.getpid())) == 1  # the child's pack is its own
    assert store.get(child_ref, tenant=None, execution_id="shared-conversation") == f"child's {CANARY}".encode()
    assert store.erase_execution(None, "shared-conversation") == 2
    assert find_leaks([CANARY], directories=[root]) == []
    again = store.put(_shared("parent's again", "shared-conversation"))  # the parent's descriptors still work
    assert FileReasoningStore(root).get(again, tenant=None, execution_id="shared-conversation") == b"parent's again"
