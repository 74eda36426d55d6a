"""FsspecReasoningStore without a server: fsspec's ``memory://`` backend, retries, construction errors."""

from __future__ import annotations

import errno
import uuid
from typing import Any

import pytest

from loom_otel.core import Envelope, ReasoningConfigError, store_from_uri
from loom_otel.core._evidence._store._fsspec import FsspecReasoningStore


def new_store(**options: Any) -> FsspecReasoningStore:
    return FsspecReasoningStore(f"memory://loom-{uuid.uuid4().hex[:8]}/reasoning", backoff=0.0, **options)


def test_sealed_roundtrip_and_erase_by_prefix() -> None:
    store = new_store()
    mine = Envelope.seal("hello", execution_id="run-1", tenant="acme")
    theirs = Envelope.seal("hello", execution_id="run-2", tenant="acme")
    assert store.put(mine) == mine.ref and store.put(mine) == mine.ref  # idempotent
    store.put(theirs)
    assert mine.ref != theirs.ref
    assert store.get(mine.ref, tenant="acme", execution_id="run-1") == b"hello"
    assert store.get(mine.ref, tenant="acme", execution_id="run-2") is None
    assert store.get(mine.ref, tenant=None, execution_id="run-1") is None
    assert store.exists(mine.ref) and not store.exists("not-a-ref")
    key = store.digest_key("acme", "run-1", create=True)
    assert key is not None and len(key) == 32 and store.digest_key("acme", "run-1") == key

    assert store.erase_execution("acme", "run-1") == 1
    assert store.erase_execution("acme", "run-1") == 0
    assert not store.exists(mine.ref) and store.digest_key("acme", "run-1") is None
    assert store.get(theirs.ref, tenant="acme", execution_id="run-2") == b"hello"
    store.delete(theirs.ref)
    store.delete(theirs.ref)
    assert not store.exists(theirs.ref)


def test_put_does_not_overwrite() -> None:
    store = new_store()
    envelope = Envelope.seal("original", execution_id="run-1")
    store.put(envelope)
    store._fs.pipe_file(store._path(envelope.ref), b"already there")
    store.put(envelope)
    assert store._fs.cat_file(store._path(envelope.ref)) == b"already there"


def test_transient_errors_are_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    store = new_store()
    envelope = Envelope.seal("flaky", execution_id="run-1")
    store.put(envelope)
    real = store._fs.cat_file
    failures = [ConnectionResetError(errno.ECONNRESET, "reset"), TimeoutError("slow"), OSError(errno.EBUSY, "busy")]

    def flaky(path: str, *args: Any, **kwargs: Any) -> bytes:
        if failures:
            raise failures.pop(0)
        data: bytes = real(path, *args, **kwargs)
        return data

    # the memory file system is one cached instance: patched for this test only
    monkeypatch.setattr(store._fs, "cat_file", flaky)
    assert store.get(envelope.ref, tenant=None, execution_id="run-1") == b"flaky"
    assert failures == []

    denied = [PermissionError("denied")]

    def forbidden(path: str, *args: Any, **kwargs: Any) -> bytes:
        raise denied[0]

    monkeypatch.setattr(store._fs, "cat_file", forbidden)
    with pytest.raises(PermissionError):  # an answer, not retried
        store.get(envelope.ref, tenant=None, execution_id="run-1")


def test_store_from_uri_and_errors() -> None:
    store = store_from_uri(f"memory://loom-{uuid.uuid4().hex[:8]}")
    assert isinstance(store, FsspecReasoningStore)
    with pytest.raises(ReasoningConfigError, match="cannot be opened"):
        FsspecReasoningStore("nosuchscheme-xyz://bucket/prefix")
    assert "secret" not in repr(FsspecReasoningStore(f"memory://user:secret@loom-{uuid.uuid4().hex[:8]}/p"))
