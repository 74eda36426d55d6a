"""Sealed stores: content-addressed, idempotent, atomic, and ``get`` answers None alike for absent,
erased and not-yours."""

from __future__ import annotations

import os
import tracemalloc

import pytest
from opentelemetry.sdk.trace import TracerProvider

from loom_otel.core import Envelope, FileReasoningStore, MemoryReasoningStore, Reasoning, ReasoningConfig, ReasoningKind
from loom_otel.core._capture import capture
from loom_otel.core._config import Runtime


@pytest.fixture(params=["memory", "file"])
def any_store(request, tmp_path):
    return MemoryReasoningStore() if request.param == "memory" else FileReasoningStore(tmp_path / "s")


def test_seal_put_get(any_store):
    envelope = Envelope.seal("thinking text", execution_id="e1", tenant="t")
    ref = any_store.put(envelope)
    assert ref == envelope.ref and any_store.put(envelope) == ref
    assert any_store.get(ref, tenant="t", execution_id="e1") == b"thinking text"
    assert any_store.get(ref, tenant="t", execution_id="e2") is None
    assert any_store.get(ref, tenant=None, execution_id="e1") is None
    assert any_store.get("0" * 32 + "/" + "1" * 64, tenant="t", execution_id="e1") is None
    assert any_store.get("../../etc/passwd", tenant="t", execution_id="e1") is None


def test_erase_execution_leaves_other_executions(any_store):
    a = any_store.put(Envelope.seal("same", execution_id="a"))
    b = any_store.put(Envelope.seal("same", execution_id="b"))
    assert a != b
    assert any_store.erase_execution(None, "a") == 1
    assert any_store.erase_execution(None, "a") == 0
    assert any_store.get(a, tenant=None, execution_id="a") is None
    assert any_store.get(b, tenant=None, execution_id="b") == b"same"


def test_file_store_writes_atomically_and_leaves_no_temp_files(tmp_path):
    store = FileReasoningStore(tmp_path / "s")
    ref = store.put(Envelope.seal("x" * 1000, execution_id="e"))
    files = [p for p in (tmp_path / "s").rglob("*") if p.is_file()]
    assert [p.name for p in files] == [ref.split("/")[1]]
    assert oct(files[0].stat().st_mode & 0o777) == oct(0o600)


def test_a_copied_blob_does_not_open_for_another_execution(tmp_path):
    store = FileReasoningStore(tmp_path / "s")
    ref = store.put(Envelope.seal("secret", execution_id="victim"))
    forged = Envelope.seal("secret", execution_id="thief")
    os.makedirs(tmp_path / "s" / "blobs" / forged.ref.split("/")[0], exist_ok=True)
    (tmp_path / "s" / "blobs" / forged.ref).write_bytes((tmp_path / "s" / "blobs" / ref).read_bytes())
    assert store.get(forged.ref, tenant=None, execution_id="thief") is None


def test_ten_megabytes_of_reasoning_cost_at_most_one_extra_copy(tmp_path):
    text = "r" * (10 * 1024 * 1024)
    runtime = Runtime.resolve(
        ReasoningConfig(store=FileReasoningStore(tmp_path / "s", fsync=False), journal=tmp_path / "j")
    )
    span = TracerProvider().get_tracer("t").start_span("chat")
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    result = capture(
        runtime,
        span,
        [Reasoning(ReasoningKind.TEXT, "anthropic", text=text)],
        provider="anthropic",
        request_model="m",
        response_model="m",
    )
    peak = tracemalloc.get_traced_memory()[1] - baseline
    tracemalloc.stop()
    assert result is not None and result.parts[0].size == len(text)
    assert peak < 1.25 * len(text), f"peak {peak} bytes for a {len(text)}-byte text"


def test_capture_after_an_erasure_by_another_store_instance(tmp_path):
    writer = FileReasoningStore(tmp_path / "s")
    writer.put(Envelope.seal("first", execution_id="e"))
    assert FileReasoningStore(tmp_path / "s").erase_execution(None, "e") == 1
    ref = writer.put(Envelope.seal("second", execution_id="e"))
    assert writer.get(ref, tenant=None, execution_id="e") == b"second"


def test_a_torn_blob_is_rewritten_on_the_next_put(tmp_path):
    store = FileReasoningStore(tmp_path / "s")
    envelope = Envelope.seal("complete text", execution_id="e")
    ref = store.put(envelope)
    path = tmp_path / "s" / "blobs" / ref
    path.write_bytes(path.read_bytes()[:-4])  # a crash mid-write
    assert store.put(envelope) == ref
    assert store.get(ref, tenant=None, execution_id="e") == b"complete text"
