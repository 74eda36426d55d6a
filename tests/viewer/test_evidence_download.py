"""The execution page's "Download evidence" over real HTTP: a bundle of what the reader may read that
``loom-otel verify --bundle`` accepts with the key alone; itself a recorded read; another reader's
captures, reads and texts are not in it; a reader who may read nothing gets the page's 404."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import httpx2
import pytest

from loom_otel.cli.__main__ import main
from loom_otel.core._evidence._journal._checkpoint import generate_key
from loom_otel.testing import find_leaks
from loom_otel.viewer import read_records
from tests.live.conftest import Server
from tests.viewer.conftest import BOB_TEXT, CANARY, NOBODY_TEXT, Captured, bearer, capture_evidence, viewer_app


@pytest.fixture
def signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Captured, Path]:
    public = tmp_path / "key.pub"
    public.write_text(generate_key(tmp_path / "key.pem"))
    monkeypatch.setenv("LOOM_OTEL_CHECKPOINT_KEY", str(tmp_path / "key.pem"))
    return capture_evidence(tmp_path / "evidence"), public


def _verify(path: Path, public: Path) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["verify", "--bundle", str(path), "--key", str(public)])
    return code, out.getvalue()


def test_download_evidence_gives_a_verifiable_bundle_of_what_the_reader_may_read(
    signed: tuple[Captured, Path], tmp_path: Path
) -> None:
    captured, public = signed
    app = viewer_app(captured)
    with Server(app) as server:
        page = httpx2.get(f"{server.url}/executions/run-alice?tenant=acme", headers=bearer("alice"), timeout=30)
        assert 'href="/executions/run-alice/evidence?tenant=acme"' in page.text
        response = httpx2.get(
            f"{server.url}/executions/run-alice/evidence?tenant=acme", headers=bearer("alice"), timeout=30
        )
        refused = httpx2.get(
            f"{server.url}/executions/run-alice/evidence?tenant=acme", headers=bearer("bob"), timeout=30
        )
        nobody = httpx2.get(
            f"{server.url}/executions/run-nobody/evidence?tenant=acme", headers=bearer("alice"), timeout=30
        )
        anonymous = httpx2.get(f"{server.url}/executions/run-alice/evidence?tenant=acme", timeout=30)
    assert response.status_code == 200
    assert response.headers["content-disposition"] == 'attachment; filename="evidence-run-alice.json"'
    assert (refused.status_code, nobody.status_code, anonymous.status_code) == (404, 404, 404)
    path = tmp_path / "alice.json"
    path.write_bytes(response.content)
    bundle = json.loads(response.content)
    assert [p["status"] for p in bundle["parts"]] == ["ok"] and CANARY in bundle["parts"][0]["text"]
    bodies = [json.loads(r["body"]) for o in bundle["origins"] for r in o["records"]]
    assert {b["type"] for b in bodies} == {"capture", "read"}  # the page view of alice's, proven
    assert {b["attributes"]["loom.read.reader"] for b in bodies if b["type"] == "read"} == {"alice"}
    for needle in ("run-bob", "run-nobody", '"bob"', BOB_TEXT, NOBODY_TEXT):
        assert needle not in response.text
    code, out = _verify(path, public)
    assert code == 0, out
    reads = [r for r in read_records(captured.root / "reads") if r.execution_id == "run-alice"]
    by_alice = [r for r in reads if r.reader == "alice"]
    assert len(by_alice) == 2 and all(r.outcome == "ok" for r in by_alice)  # the page, then the download
    assert [r.outcome for r in reads if r.reader == "bob"] == ["not-found"]
    assert find_leaks([CANARY, BOB_TEXT, NOBODY_TEXT], spans=captured.spans, directories=[captured.journal]) == []
