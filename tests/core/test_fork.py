"""Fork safety: a child forked while another thread of the parent held a loom-otel lock still works.

Each case holds one lock on a parent thread, forks, and has the child do the locked operation (a
store ``put``, a binding record, an attempt count, a journal ``append``, a live ``offer``, a resent
record span). A child that hangs is killed after ``HANG`` seconds and the case fails.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loom_otel.core import Envelope, FileReasoningStore, MemoryReasoningStore
from loom_otel.core._continuation import _bindings
from loom_otel.core._continuation._bindings import Bindings, BlockRecord
from loom_otel.core._evidence._journal import _writer as _journal
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.core._runtime import _context
from loom_otel.exporters.chain import ChainedSpanExporter
from loom_otel.exporters.chain._spans import RecordSpans
from loom_otel.live import _channel as _live
from loom_otel.live._channel import CallStarted, LiveCall
from loom_otel.live._handoff import Handoff
from loom_otel.live._hub import LiveReasoningHub
from tests.support.forking import HANG, fork_runs

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")

HOLD = 5.0
"""At most this long the parent thread keeps the lock, so a parent that waits for it at fork (as the
journal once did) is slowed down, never deadlocked."""


@contextmanager
def held(lock: Any) -> Iterator[None]:
    """Another thread holds ``lock`` until the block ends (at most ``HOLD`` seconds)."""
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            done.wait(HOLD)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert taken.wait(HOLD)
    try:
        yield
    finally:
        done.set()
        thread.join()


def _record(n: int) -> tuple[bytes, BlockRecord]:
    return bytes([n]) * 32, BlockRecord(b"b" * 32, "anthropic", "m", b"s" * 32, b"t" * 32, None, None)


def test_file_store_put_in_a_child_while_a_parent_thread_holds_the_store(tmp_path: Path) -> None:
    store = FileReasoningStore(tmp_path / "s", fsync=False)
    store.put(Envelope.seal("before the fork", execution_id="e"))  # an open pack the child must not use
    envelope = Envelope.seal("written by the child", execution_id="e")

    def child() -> None:
        assert store.put(envelope) == envelope.ref
        assert store.get(envelope.ref, tenant=None, execution_id="e") == b"written by the child"

    with held(store._lock):
        fork_runs(child)
    assert (
        FileReasoningStore(tmp_path / "s").get(envelope.ref, tenant=None, execution_id="e") == b"written by the child"
    )


def test_memory_store_put_in_a_child(tmp_path: Path) -> None:
    store = MemoryReasoningStore()
    envelope = Envelope.seal("text", execution_id="e")
    with held(store._lock):
        fork_runs(lambda: store.put(envelope))


def test_binding_records_in_a_child(tmp_path: Path) -> None:
    bindings = Bindings(tmp_path / "journal.bindings")
    bindings.add([_record(1)], [])

    def child() -> None:
        bindings.add([_record(2)], [])
        assert bindings.block(_record(2)[0]) is not None

    with held(bindings._lock):
        fork_runs(child)
    with held(_bindings._registry_lock):
        fork_runs(lambda: _bindings.bindings_for(tmp_path / "other-journal"))


def test_a_child_writes_its_own_binding_lines_and_never_the_parents(tmp_path: Path) -> None:
    directory = tmp_path / "journal.bindings"
    bindings = Bindings(directory, deferred=True)
    bindings.add([_record(1)], [])  # pending in the parent when it forks

    def child() -> None:
        bindings.add([_record(2)], [])
        bindings.close()

    fork_runs(child)
    bindings.close()
    files = sorted(directory.glob("*.jsonl"))
    keys = sorted(BlockRecord.from_json(line)[0] for f in files for line in f.read_text().splitlines())  # type: ignore[index]
    assert len(files) == 2 and keys == sorted([_record(1)[0], _record(2)[0]])


def test_attempt_counter_in_a_child() -> None:
    def child() -> None:
        with _context.step("s"):
            assert _context.next_attempt(None, "fork-e", "s", named=True) == 1

    with held(_context._attempts_lock):
        fork_runs(child)


@pytest.mark.parametrize("lock", ["_lock", "_synced_cond"])
def test_journal_append_in_a_child(tmp_path: Path, lock: str) -> None:
    journal = Journal(tmp_path / "j", durability="batch", checkpoint_key=None)
    journal.append("capture", {"who": "parent"})  # the group-commit thread runs: the child needs its own

    def child() -> None:
        entry = journal.append("capture", {"who": "child"})
        assert entry.seq == 1 and entry.origin != parent_origin
        journal.close()

    parent_origin = journal.origin
    with held(getattr(journal, lock)):
        fork_runs(child)
    assert journal.append("capture", {"who": "parent"}).seq == 2
    journal.close()


def test_journal_registry_in_a_child(tmp_path: Path) -> None:
    with held(_journal._journals_lock):
        fork_runs(lambda: _journal.open_journal(tmp_path / "j2", durability="os", checkpoint_key=None))


def test_live_handoff_offer_in_a_child() -> None:
    got: list[str] = []
    handoff: Handoff[str] = Handoff(got.append, what="fork test")
    handoff.offer("parent")  # the worker thread exists in the parent, not in the child
    assert handoff.flush(HANG)

    def child() -> None:
        handoff.offer("child")
        assert handoff.flush(HANG / 2), "no worker delivered in the child"
        assert got == ["parent", "child"]

    with held(handoff._cond):
        fork_runs(child)


def test_live_hub_and_sink_registry_in_a_child() -> None:
    hub = LiveReasoningHub()
    call = LiveCall(call_id=1, execution_id="e", step_id="s", provider="anthropic")

    def child() -> None:
        hub.observe(CallStarted(call))
        _live.register_sink(lambda event: None)()

    with held(hub._lock), held(_live._registered_lock):
        fork_runs(child)


def test_chained_exporter_resend_in_a_child(tmp_path: Path) -> None:
    spans = RecordSpans()
    record = {
        "v": 1,
        "origin": "o",
        "seq": 1,
        "prev": "0" * 64,
        "time": 1,
        "type": "checkpoint",
        "attributes": {},
        "hash": "1" * 64,
    }
    spans.build([record])  # the private provider exists before the fork
    exporter = ChainedSpanExporter(InMemorySpanExporter(), journal=tmp_path / "j")

    def child() -> None:
        assert len(spans.build([record])) == 1
        assert exporter.force_flush(int(HANG * 500))

    with held(spans._lock), held(spans._collector._lock), held(exporter._lock):
        fork_runs(child)
    exporter.shutdown()


@pytest.mark.parametrize("lock", ["_entering", "_lock", "windows"])
def test_scrubber_registry_in_a_child(lock: str) -> None:
    """A parent thread enters a capture (or indexes its windows) at the fork: the child enters its own
    capture and finds it."""
    from loom_otel.core._scrub import scrub_value
    from loom_otel.core._scrub._registry import registry
    from tests.scrub.test_scrub_batched import _remember

    secret = "CANARY-fork-registry: a thought of the child's own, long enough to be found in a value."

    def child() -> None:
        _remember(secret, 0xF0)
        assert "CANARY" not in scrub_value("said: " + secret, 0xF0)

    with held(registry.windows._lock if lock == "windows" else getattr(registry, lock)):
        fork_runs(child)
