"""``/executions/ID`` without ``?tenant=`` (issue 43): the one execution of that id the reader may read is
shown as if its tenant had been named; when the reader may read it under several tenants, they are
listed to choose from; a reader who may read none still gets the same 404."""

from __future__ import annotations

import httpx2
import pytest

from loom_otel.core import ReasoningConfig, execution, step
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from loom_otel.viewer import read_records
from tests.anthropic.modes import MODES, request
from tests.live.conftest import Server
from tests.viewer.conftest import BOB_TEXT, CANARY, Captured, bearer, capture_evidence, viewer_app

GLOBEX_TEXT = "CANARY-viewer-globex-5a1c reasoning of alice at globex"


def _capture(captured: Captured, text: str, run: str, tenant: str) -> None:
    config = ReasoningConfig(store=captured.store_url, journal=captured.journal)
    with instrumented(AnthropicInstrumentor(), config=config):
        with execution(run, tenant=tenant, principal="alice", owner=None), step("s0"):
            MODES["sync"](Simulator(reasoning_text=text), request())


@pytest.fixture
def captured(tmp_path) -> Captured:
    evidence = capture_evidence(tmp_path)
    _capture(evidence, GLOBEX_TEXT, "run-shared", "globex")
    _capture(evidence, f"acme {GLOBEX_TEXT}", "run-shared", "acme")
    return evidence


@pytest.fixture
def server(captured):
    app = viewer_app(captured)
    with Server(app) as running:
        yield running


def _get(server, path, who):
    return httpx2.get(f"{server.url}{path}", headers=bearer(who), timeout=30)


def test_the_one_tenant_the_reader_may_read_is_shown(server, captured):
    page = _get(server, "/executions/run-alice", "alice")
    assert page.status_code == 200 and CANARY in page.text and "tenant <b>acme</b>" in page.text
    api = _get(server, "/api/executions/run-alice", "alice")
    assert api.status_code == 200 and api.json()["tenant"] == "acme"
    (read, *_) = [r for r in read_records(captured.root / "reads") if r.outcome != "not-found"]
    assert read.tenant == "acme" and read.execution_id == "run-alice" and read.reader == "alice"


def test_several_tenants_are_listed_to_choose_from(server):
    page = _get(server, "/executions/run-shared", "alice")
    assert page.status_code == 200
    assert "/executions/run-shared?tenant=acme" in page.text and "/executions/run-shared?tenant=globex" in page.text
    assert not find_leaks([GLOBEX_TEXT], texts=[page.text])  # a list, no reasoning
    api = _get(server, "/api/executions/run-shared", "alice")
    assert api.status_code == 300
    assert sorted(e["tenant"] for e in api.json()["executions"]) == ["acme", "globex"]
    chosen = _get(server, "/executions/run-shared?tenant=globex", "alice")
    assert chosen.status_code == 200 and GLOBEX_TEXT in chosen.text


def test_a_reader_who_may_read_none_gets_the_same_404(server):
    for who, path in (("bob", "/executions/run-alice"), ("mallory", "/executions/run-shared")):
        refused, missing = _get(server, path, who), _get(server, "/executions/never-was", who)
        assert refused.status_code == missing.status_code == 404
        assert not find_leaks([CANARY, BOB_TEXT, GLOBEX_TEXT], texts=[refused.text])
    api = _get(server, "/api/executions/run-shared", "bob")
    assert api.status_code == 404 and api.content == _get(server, "/api/executions/never-was", "bob").content
