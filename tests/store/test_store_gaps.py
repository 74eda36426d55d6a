"""Records written outside the store's lock (issue 49): each record's place in its pack is reserved under
the lock and written with ``pwritev`` outside it, its frame carrying its length and a checksum, so a write
that fails leaves a gap that readers skip and ``verify --store`` names, and threads write side by side."""

from __future__ import annotations

import errno
import io
import os
import struct
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from loom_otel.cli.__main__ import build_parser
from loom_otel.core import Envelope, FileReasoningStore, ReasoningCaptureError, ReasoningConfig, execution
from loom_otel.core._evidence._store import _file
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import request

CANARY = "CANARY-gap-3c71-failed-write"


def cli(*argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    code = args.func(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_a_failed_pack_write_leaves_a_gap_that_reads_skip_and_verify_names(tmp_path: Path) -> None:
    """A thread's write fails half way (the disk filled up) while another thread's record lands after the
    place reserved for it: the call fails closed, the other record and later captures read back, and
    ``verify --store`` names the gap (no record names it: no evidence is lost)."""
    root = tmp_path / "store"
    store = FileReasoningStore(root, fsync=False)
    config = ReasoningConfig(store=store, journal=tmp_path / "journal")
    beside = Envelope.seal("written by another thread meanwhile", execution_id="run")
    real = os.pwritev
    failed: list[int] = []

    def disk_fills_up(fd: int, chunks: Sequence[bytes], offset: int) -> int:
        if not any(CANARY.encode() in bytes(chunk) for chunk in chunks):
            return real(fd, chunks, offset)
        other = threading.Thread(target=store.put, args=(beside,))  # reserves the place after this one
        other.start()
        other.join()
        record = b"".join(chunks)
        failed.append(len(record))
        real(fd, [record[:40]], offset)  # the frame and part of the ref, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    sim = Simulator(reasoning_text=f"thinking {CANARY}")
    later = Simulator(reasoning_text="a later call, after the disk had room again")
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with pytest.MonkeyPatch.context() as patch, execution("run"), pytest.raises(ReasoningCaptureError) as info:
            patch.setattr(_file.os, "pwritev", disk_fills_up)
            sim.anthropic_client().messages.create(**request())
        with execution("run"):
            later.anthropic_client().messages.create(**request())
    assert failed, "the failing write was not reached"
    (event,) = reasoning_events(telemetry.spans)  # the later call's; the failed one claims no part
    (ref,) = event["loom.reasoning.part.ref"]

    fresh = FileReasoningStore(root)  # another process reads it all back, the gap skipped
    assert fresh.get(beside.ref, tenant=None, execution_id="run") == b"written by another thread meanwhile"
    assert fresh.get(ref, tenant=None, execution_id="run") == b"a later call, after the disk had room again"
    (gap,) = fresh.pack_gaps()
    assert gap.pack.startswith("blobs/") and gap.length == failed[0]

    code, out, err = cli("verify", str(tmp_path / "journal"), "--store", f"file://{root}")
    assert code == 0, out + err
    assert "1 whole" in out and "0 missing" in out
    assert "1 gap(s) in packs" in out and f"{gap.pack} at {gap.offset} ({gap.length} bytes)" in out
    leaks = find_leaks(
        [CANARY], spans=telemetry.spans, directories=[tmp_path / "journal"], texts=[str(info.value), out]
    )
    assert leaks == []


def test_a_reader_does_not_skip_past_a_write_still_under_way(tmp_path: Path) -> None:
    """Another process indexes the pack while one record is still being written and the next is there
    already: it reads the next one, and the first once its write is done (it looks from the gap again)."""
    root = tmp_path / "s"
    writer = FileReasoningStore(root, fsync=False)
    writer.put(Envelope.seal("first", execution_id="e"))
    slow = Envelope.seal("written slowly", execution_id="e")
    after = Envelope.seal("written after it", execution_id="e")
    reader = FileReasoningStore(root, fsync=False)
    real = os.pwritev
    seen: list[bytes | None] = []

    def slowly(fd: int, chunks: Sequence[bytes], offset: int) -> int:
        if not any(b"written slowly" in bytes(chunk) for chunk in chunks):
            return real(fd, chunks, offset)
        other = threading.Thread(target=writer.put, args=(after,))
        other.start()
        other.join()
        seen.append(reader.get(after.ref, tenant=None, execution_id="e"))  # indexes past the gap
        seen.append(reader.get(slow.ref, tenant=None, execution_id="e"))  # not written yet
        return real(fd, chunks, offset)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_file.os, "pwritev", slowly)
        writer.put(slow)
    assert seen == [b"written after it", None]
    assert reader.get(slow.ref, tenant=None, execution_id="e") == b"written slowly"
    assert reader.pack_gaps() == ()


def test_sixteen_threads_write_side_by_side_and_every_record_is_whole(tmp_path: Path) -> None:
    root = tmp_path / "s"
    store = FileReasoningStore(root, fsync=False)
    envelopes = [
        Envelope.seal(f"thread {t} text {n}", execution_id=f"e{n % 3}", named=n % 2 == 0)
        for t in range(16)
        for n in range(20)
    ]
    threads = [
        threading.Thread(target=lambda t=t: [store.put(e) for e in envelopes[t * 20 : t * 20 + 20]]) for t in range(16)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    fresh = FileReasoningStore(root, fsync=False)
    for envelope in envelopes:
        expected = b"".join(envelope.sealed())
        assert fresh.sealed_blob(envelope.ref) == expected
    assert fresh.pack_gaps() == ()


def test_a_record_whose_bytes_changed_reads_as_absent_and_is_a_gap(tmp_path: Path) -> None:
    """The checksum: a record whose blob changed on disk is not handed back (its frame alone looks whole)."""
    root = tmp_path / "s"
    store = FileReasoningStore(root, fsync=False)
    kept = store.put(Envelope.seal("kept", execution_id="e"))
    changed = store.put(Envelope.seal("changed on disk", execution_id="e"))
    (pack,) = (p for p in root.rglob("*.pack") if ".pools" not in p.parts)
    data = pack.read_bytes()
    pack.write_bytes(data.replace(b"changed on disk", b"CHANGED on disk"))
    fresh = FileReasoningStore(root, fsync=False)
    assert fresh.get(kept, tenant=None, execution_id="e") == b"kept"
    assert fresh.get(changed, tenant=None, execution_id="e") is None
    (gap,) = fresh.pack_gaps()
    assert gap.offset == data.index(b"LOOMPK2\n", 1) and gap.offset + gap.length == len(data)


_V1: struct.Struct = struct.Struct(">8sHQ")


def test_packs_of_the_first_format_are_still_read_and_erased_in_place(tmp_path: Path) -> None:
    """Packs written before the checksummed frame (``LOOMPK1``) read back, and erasure overwrites them."""
    root = tmp_path / "s"
    old = Envelope.seal("written by the first format", execution_id="old", named=False)
    neighbour = Envelope.seal("its neighbour", execution_id="neighbour", named=False)
    shard = root / "packs" / _file.shard_of(old.ref[:32])
    shard.mkdir(parents=True)
    records = b""
    for envelope in (old, neighbour):
        blob, ref = b"".join(envelope.sealed()), envelope.ref.encode()
        records += _V1.pack(b"LOOMPK1\n", len(ref), len(blob)) + ref + blob
    (shard / "1-000000000000.pack").write_bytes(records)
    store = FileReasoningStore(root, fsync=False)
    assert store.get(old.ref, tenant=None, execution_id="old") == b"written by the first format"
    assert store.pack_gaps() == ()
    assert store.erase_execution(None, "old") == 1
    assert FileReasoningStore(root).get(old.ref, tenant=None, execution_id="old") is None
    data = (shard / "1-000000000000.pack").read_bytes()
    assert b"written by the first format" not in data and data.startswith(b"LOOMPK0\n") and len(data) == len(records)
    assert b"its neighbour" in data  # the other execution's record in the same pack stays
