"""Sealed stores: content-addressed, idempotent, atomic, and ``get`` answers None alike for absent,
erased and not-yours."""

from __future__ import annotations

import tracemalloc

import pytest
from opentelemetry.sdk.trace import TracerProvider

from loom_otel.core import Envelope, FileReasoningStore, MemoryReasoningStore, Reasoning, ReasoningConfig, ReasoningKind
from loom_otel.core._calls._capture import capture
from loom_otel.core._runtime._config import Runtime


@pytest.fixture(params=["memory", "file"])
def any_store(request, tmp_path):
    return MemoryReasoningStore() if request.param == "memory" else FileReasoningStore(tmp_path / "s")


def _packs(root):
    """The packs of every execution under a store's root (not a writer's ready directories: dot-entries)."""
    return [p for p in root.rglob("*.pack") if not any(part.startswith(".") for part in p.relative_to(root).parts)]


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


def test_file_store_packs_an_execution_and_leaves_no_temp_files(tmp_path):
    store = FileReasoningStore(tmp_path / "s")
    refs = [store.put(Envelope.seal(f"text {i}", execution_id="e")) for i in range(3)]
    blobs = tmp_path / "s" / "blobs"
    files = [p for p in blobs.rglob("*") if p.is_file() and not p.relative_to(blobs).parts[0].startswith(".")]
    assert len(files) == 1 and files[0].suffix == ".pack"
    assert oct(files[0].stat().st_mode & 0o777) == oct(0o600)
    reader = FileReasoningStore(tmp_path / "s")  # another process's view: indexes the pack from disk
    assert [reader.get(r, tenant=None, execution_id="e") for r in refs] == [b"text 0", b"text 1", b"text 2"]


def test_delete_removes_one_blob_and_keeps_the_others(tmp_path):
    store = FileReasoningStore(tmp_path / "s")
    keep = store.put(Envelope.seal("keep", execution_id="e"))
    gone = store.put(Envelope.seal("gone", execution_id="e"))
    store.delete(gone)
    assert store.get(gone, tenant=None, execution_id="e") is None and not store.exists(gone)
    assert store.get(keep, tenant=None, execution_id="e") == b"keep"
    assert b"gone" not in b"".join(p.read_bytes() for p in _packs(tmp_path / "s"))
    again = store.put(Envelope.seal("after", execution_id="e"))
    assert FileReasoningStore(tmp_path / "s").get(again, tenant=None, execution_id="e") == b"after"


def test_a_copied_blob_does_not_open_for_another_execution(tmp_path):
    store = FileReasoningStore(tmp_path / "s")
    ref = store.put(Envelope.seal("secret", execution_id="victim"))
    forged = Envelope.seal("secret", execution_id="thief")
    store.write_sealed_blob(forged.ref, store.sealed_blob(ref))
    assert store.exists(forged.ref)
    assert store.get(forged.ref, tenant=None, execution_id="thief") is None


def test_the_file_store_writes_the_sealed_blob_format(tmp_path):
    """One format for every store (``_store/_sealed``): the blob on disk is ``Envelope.sealed()``, it starts
    with ``MAGIC``, and ``unseal`` opens it for its own scope only."""
    from loom_otel.core._evidence._store._sealed import MAGIC, REF, opens, unseal

    store = FileReasoningStore(tmp_path / "s")
    envelope = Envelope.seal("CANARY-sealed-5e1d", execution_id="e1", tenant="t")
    ref = store.put(envelope)
    blob = store.sealed_blob(ref)
    assert blob == b"".join(envelope.sealed()) and blob.startswith(MAGIC) and REF.match(ref)
    assert opens(ref, "t", "e1") and not opens(ref, "t", "e2") and not opens(ref, None, "e1")
    assert unseal(blob, "t", "e1") == b"CANARY-sealed-5e1d"
    assert unseal(blob, "t", "e2") is None and unseal(blob, None, "e1") is None
    assert unseal(blob[len(MAGIC) :], "t", "e1") is None


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


def test_a_torn_tail_is_never_read_and_the_next_put_lands_whole(tmp_path):
    store = FileReasoningStore(tmp_path / "s")
    whole = store.put(Envelope.seal("whole", execution_id="e"))
    torn = Envelope.seal("torn by a crash", execution_id="e")
    store.put(torn)
    (pack,) = _packs(tmp_path / "s")
    pack.write_bytes(pack.read_bytes()[:-4])  # the crash cut the last record
    fresh = FileReasoningStore(tmp_path / "s")  # the next process
    assert fresh.get(whole, tenant=None, execution_id="e") == b"whole"
    assert fresh.get(torn.ref, tenant=None, execution_id="e") is None and not fresh.exists(torn.ref)
    assert fresh.put(torn) == torn.ref
    assert FileReasoningStore(tmp_path / "s").get(torn.ref, tenant=None, execution_id="e") == b"torn by a crash"


def test_a_capture_racing_an_erasure_is_kept(tmp_path):
    writer = FileReasoningStore(tmp_path / "s")
    writer.put(Envelope.seal("before", execution_id="e"))
    FileReasoningStore(tmp_path / "s").erase_execution(None, "e")  # under the writer's open pack
    ref = writer.put(Envelope.seal("after", execution_id="e"))
    assert FileReasoningStore(tmp_path / "s").get(ref, tenant=None, execution_id="e") == b"after"


def test_recapturing_the_same_text_after_another_process_erased_it(tmp_path):
    writer = FileReasoningStore(tmp_path / "s")
    envelope = Envelope.seal("same text", execution_id="e")
    writer.put(envelope)
    FileReasoningStore(tmp_path / "s").erase_execution(None, "e")
    writer.put(envelope)
    assert FileReasoningStore(tmp_path / "s").get(envelope.ref, tenant=None, execution_id="e") == b"same text"


def test_blob_address_is_the_canonical_formula():
    """Refs are stable across versions: the address is SHA-256 of the canonical JSON triple."""
    import hashlib

    from loom_otel.core._evidence._canonical import canonical_json
    from loom_otel.core._evidence._store._protocol import scope_of

    envelope = Envelope.seal('quote " and \\ text', execution_id='exec "1"', tenant="t\n")
    scope = scope_of("t\n", 'exec "1"')
    address = hashlib.sha256(canonical_json(["loom-otel/blob/v1", scope, envelope.digest])).hexdigest()
    assert envelope.ref == f"{scope}/{address}"


@pytest.mark.parametrize("tenant", [None, "t"])
@pytest.mark.parametrize("execution_id", ["9255514d443a617773b03c800c97c00d", "ABCdef09", "a-b", "é", "x y", ""])
def test_a_scope_name_is_the_canonical_formula(tenant, execution_id):
    """A new conversation's hex id has its scope name built without the JSON encoder: the same name."""
    import hashlib

    from loom_otel.core._evidence._canonical import canonical_json
    from loom_otel.core._evidence._store._protocol import scope_of

    expected = hashlib.sha256(canonical_json(["loom-otel/scope/v1", tenant, execution_id])).hexdigest()[:32]
    assert scope_of(tenant, execution_id) == expected


def test_a_pack_erased_under_its_writer_gets_the_blob_again(tmp_path):
    writer, eraser = FileReasoningStore(tmp_path / "s"), FileReasoningStore(tmp_path / "s")
    first = writer.put(Envelope.seal("one", execution_id="e1"))
    assert eraser.erase_execution(None, "e1") >= 1  # another writer (process) erases the execution
    second = writer.put(Envelope.seal("two", execution_id="e1"))  # into a pack that no longer exists
    assert eraser.get(second, tenant=None, execution_id="e1") == b"two"
    assert eraser.get(first, tenant=None, execution_id="e1") is None


def test_the_blob_index_is_bounded_and_rebuilt_from_disk(tmp_path, monkeypatch):
    from loom_otel.core._evidence._store import _file as _file_store

    monkeypatch.setattr(_file_store, "_KNOWN_SCOPES", 4)
    store = FileReasoningStore(tmp_path / "s")
    refs = [store.put(Envelope.seal(f"text {n}", execution_id=f"e{n}")) for n in range(10)]
    assert len(store._scopes) <= 4
    assert store.get(refs[0], tenant=None, execution_id="e0") == b"text 0"  # evicted, read from disk again
    size = sum(p.stat().st_size for p in _packs(tmp_path / "s"))
    assert store.put(Envelope.seal("text 1", execution_id="e1")) == refs[1]  # still content-addressed
    assert sum(p.stat().st_size for p in _packs(tmp_path / "s")) == size


@pytest.mark.parametrize("kind", ["memory", "file", "fsspec"])
def test_every_store_hands_back_the_audience_sealed_with_the_text(kind, tmp_path):
    """The audience (principal, owner) is sealed with the text and handed back with it (``unsealed``);
    ``get`` still answers the text alone, and both answer ``None`` alike for absent, erased, not-yours."""
    import uuid

    from loom_otel.core._evidence._store._fsspec import FsspecReasoningStore
    from loom_otel.core._evidence._store._protocol import AudienceStore

    stores = {
        "memory": MemoryReasoningStore,
        "file": lambda: FileReasoningStore(tmp_path / "s"),
        "fsspec": lambda: FsspecReasoningStore(f"memory://loom-{uuid.uuid4().hex[:8]}/r", backoff=0.0),
    }
    store = stores[kind]()
    assert isinstance(store, AudienceStore)
    sealed = Envelope.seal("CANARY-audience-3c1f", execution_id="e1", tenant="t", principal="alice", owner="olga")
    nobodys = Envelope.seal("CANARY-audience-3c1f", execution_id="e1", tenant="t")
    assert sealed.ref != nobodys.ref  # the audience is part of the address
    store.put(sealed)
    store.put(nobodys)
    opened = store.unsealed(sealed.ref, tenant="t", execution_id="e1")
    assert opened is not None and (opened.body, opened.principal, opened.owner) == (sealed.body, "alice", "olga")
    opened = store.unsealed(nobodys.ref, tenant="t", execution_id="e1")
    assert opened is not None and (opened.principal, opened.owner) == (None, None)
    assert store.get(sealed.ref, tenant="t", execution_id="e1") == sealed.body
    for tenant, execution_id in [("t", "e2"), (None, "e1")]:
        assert store.unsealed(sealed.ref, tenant=tenant, execution_id=execution_id) is None
    store.erase_execution("t", "e1")
    assert store.unsealed(sealed.ref, tenant="t", execution_id="e1") is None
    assert store.get(sealed.ref, tenant="t", execution_id="e1") is None


def test_an_audience_blob_address_is_the_canonical_formula():
    """With an audience: SHA-256 of the canonical JSON of version, scope, digest, principal and owner."""
    import hashlib

    from loom_otel.core._evidence._canonical import canonical_json
    from loom_otel.core._evidence._store._protocol import scope_of

    envelope = Envelope.seal("text", execution_id="e", tenant="t", principal="alice")
    address = hashlib.sha256(canonical_json(["loom-otel/blob/v2", scope_of("t", "e"), envelope.digest, "alice", None]))
    assert envelope.ref == f"{scope_of('t', 'e')}/{address.hexdigest()}"
    assert b"".join(envelope.sealed()).split(b"\n")[1] == canonical_json(
        {"digest": envelope.digest, "execution_id": "e", "principal": "alice", "tenant": "t"}
    )
