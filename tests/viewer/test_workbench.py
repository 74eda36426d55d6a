"""The auditor's pages: the listing's columns (from what the reader may read only), search, time range and
paging, in HTML and JSON; an execution's steps labelled by time and model, its layout line and an erased
part's when, why and who; sign-in returning to the page that asked for it."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import httpx2
import pytest

from loom_otel.audit import erase_execution
from loom_otel.core import FileReasoningStore, ReasoningConfig
from loom_otel.core._evidence._journal._checkpoint import generate_key, load_public_key
from loom_otel.core.exceptions import ReasoningConfigError
from loom_otel.viewer import create_app, tokens_file_authenticator
from tests.live.conftest import Server
from tests.viewer.conftest import CANARY, TOKENS, Captured, bearer, capture_run, viewer_app

TRACE: list[str] = []
"""The trace id of run-alice's first call (set by the fixture)."""
POLICY = '[tenants.acme]\nauditors = ["ada"]\nretention = "30d"\n'


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Three executions of tenant acme (alice's two steps, bob's, alice's erased one), signed checkpoints
    and a signed tombstone; the viewer trusts the deployment key."""
    key, public = tmp_path / "deploy.pem", tmp_path / "deploy.pub"
    public.write_text(generate_key(key))
    monkeypatch.setenv("LOOM_OTEL_CHECKPOINT_KEY", str(key))
    store_dir, journal = tmp_path / "store", tmp_path / "journal"
    config = ReasoningConfig(store=f"file://{store_dir}", journal=journal, checkpoint_key=key)
    trace = capture_run(config, f"{CANARY} alice thinks", "run-alice", principal="alice", steps=2)
    capture_run(config, f"{CANARY} bob thinks", "run-bob", principal="bob")
    capture_run(config, f"{CANARY} to be erased", "run-gone", principal="alice")
    erase_execution(FileReasoningStore(store_dir), "acme", "run-gone", journal=journal, reason="gdpr-17", by="dpo")
    tokens = tmp_path / "tokens.toml"
    tokens.write_text("[tokens]\n" + "".join(f'{p} = "{t}"\n' for p, t in TOKENS.items()))
    (tmp_path / "policy.toml").write_text(POLICY)
    app = viewer_app(
        Captured(tmp_path, f"file://{store_dir}", journal, tokens, tmp_path / "policy.toml", trace_id=trace),
        trace_url="http://jaeger.local/trace/{trace_id}",
        trust=(load_public_key(public),),
    )
    with Server(app) as running:
        TRACE[:] = [trace]
        yield running


def _get(server: Server, path: str, principal: str | None = None) -> httpx2.Response:
    headers = bearer(principal) if principal else {}
    return httpx2.get(f"{server.url}{path}", headers=headers, timeout=30, follow_redirects=False)


def _ids(response: httpx2.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [r["execution_id"] for r in response.json()]


def test_the_listing_shows_principal_owner_provider_and_model_of_what_the_reader_may_read(server):
    rows = {r["execution_id"]: r for r in _get(server, "/api/executions", "ada").json()}
    assert set(rows) == {"run-alice", "run-bob", "run-gone"}
    assert rows["run-alice"]["principals"] == ["alice"] and rows["run-bob"]["principals"] == ["bob"]
    assert rows["run-alice"]["providers"] == ["anthropic"] and rows["run-alice"]["models"]
    assert rows["run-alice"]["calls"] == 2
    page = _get(server, "/", "ada").text
    for column in ("first capture", "principal", "owner", "provider", "model"):
        assert f"<th>{column}</th>" in page
    assert "<td>bob</td>" in page
    # alice never learns bob's name, from the list or by searching for it
    assert _ids(_get(server, "/api/executions", "alice")) == ["run-gone", "run-alice"]
    assert "bob" not in _get(server, "/", "alice").text.replace('"bob', "")
    assert _ids(_get(server, "/api/executions?q=bob", "alice")) == []


def test_search_by_execution_trace_principal_and_model(server):
    model = _get(server, "/api/executions?q=run-bob", "ada").json()[0]["models"][0]
    assert _ids(_get(server, "/api/executions?q=run-bob", "ada")) == ["run-bob"]
    assert _ids(_get(server, "/api/executions?q=bob", "ada")) == ["run-bob"]
    assert _ids(_get(server, f"/api/executions?q={TRACE[0]}", "ada")) == ["run-alice"]
    assert set(_ids(_get(server, f"/api/executions?q={model}", "ada"))) == {"run-alice", "run-bob", "run-gone"}
    assert _ids(_get(server, "/api/executions?q=no-such-thing", "ada")) == []
    page = _get(server, '/?q=<b id="x">', "ada").text  # reflected escaped
    assert 'value="&lt;b id=&quot;x&quot;&gt;"' in page and '<b id="x">' not in page


def test_a_time_range_and_a_bad_one(server):
    assert len(_ids(_get(server, "/api/executions?since=2000-01-01&until=2999-01-01", "ada"))) == 3
    assert _ids(_get(server, "/api/executions?until=2000-01-01", "ada")) == []
    assert _ids(_get(server, "/api/executions?since=2999-01-01T00:00Z", "ada")) == []
    bad = _get(server, "/api/executions?since=last-week", "ada")
    assert bad.status_code == 400 and "since" in bad.json()["error"] and "not a time" in bad.json()["error"]
    backwards = _get(server, "/api/executions?since=2026-12-02&until=2026-12-01", "ada")
    assert backwards.status_code == 400 and "ends before it starts" in backwards.json()["error"]
    page = _get(server, "/?since=last-week", "ada")
    assert page.status_code == 400 and 'class="error"' in page.text and "not a time" in page.text


def test_paging_shows_where_it_is_and_how_many(server):
    first = _get(server, "/api/executions?limit=2", "ada")
    assert first.headers["X-Total-Count"] == "3" and len(first.json()) == 2
    second = _get(server, "/api/executions?limit=2&offset=2", "ada")
    assert len(second.json()) == 1 and second.json()[0]["execution_id"] not in _ids(first)
    page = _get(server, "/?limit=2&tenant=acme", "ada").text
    assert "executions 1-2 of 3" in page
    assert re.search(r'rel="next" href="/\?tenant=acme&amp;offset=2"', page)
    last = _get(server, "/?limit=2&tenant=acme&offset=2", "ada").text
    assert "executions 3-3 of 3" in last and 'rel="prev"' in last and 'rel="next"' not in last


def test_an_execution_page_labels_steps_and_shows_the_layout_and_the_trace(server):
    document = _get(server, "/api/executions/run-alice?tenant=acme", "ada").json()
    model = document["steps"][0]["attempts"][0]["response_model"]
    page = _get(server, "/executions/run-alice?tenant=acme", "ada").text
    labels = re.findall(r'<h2 class="step-label">([^<]*)<', page)
    assert len(labels) == 2 and all(model in label and "1 attempt" in label for label in labels)
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", labels[0])
    assert '<p class="layout">thought, then answered</p>' in page
    assert f'href="http://jaeger.local/trace/{TRACE[0]}"' in page
    one_step = _get(server, "/executions/run-alice?tenant=acme&step=s1", "ada").text
    assert 'class="whole" href="/executions/run-alice?tenant=acme"' in one_step
    assert 'class="whole"' not in page


@pytest.mark.parametrize("path", ["/executions/run-alice?tenant=acme&step=s1", "/executions/never-was"])
def test_sign_in_from_the_top_bar_returns_to_the_page(server, path):
    page = _get(server, path).text  # anonymous: the 404 page, its top bar and its hint
    nexts = re.findall(r'href="/signin\?next=([^"]+)"', page)
    assert len(nexts) == 2
    expected = httpx2.QueryParams({"next": path})["next"]
    for value in nexts:
        target = httpx2.QueryParams(f"next={value.replace('&amp;', '&')}")["next"]
        assert target == expected
    response = httpx2.post(
        f"{server.url}/signin", data={"token": TOKENS["ada"], "next": expected}, timeout=30, follow_redirects=False
    )
    assert response.status_code == 303 and response.headers["location"] == path


def test_the_listing_counts_erased_and_missing_parts(server, tmp_path):
    rows = {r["execution_id"]: r for r in _get(server, "/api/executions", "ada").json()}
    assert (rows["run-gone"]["erased"], rows["run-gone"]["missing"]) == (1, 0)
    assert (rows["run-alice"]["erased"], rows["run-alice"]["missing"]) == (0, 0)
    (part,) = _get(server, "/api/executions/run-bob?tenant=acme", "ada").json()["steps"][0]["attempts"][0]["parts"]
    FileReasoningStore(tmp_path / "store").delete(part["ref"])  # lost without a tombstone
    rows = {r["execution_id"]: r for r in _get(server, "/api/executions", "ada").json()}
    assert (rows["run-bob"]["erased"], rows["run-bob"]["missing"]) == (0, 1)
    assert (rows["run-gone"]["erased"], rows["run-gone"]["missing"]) == (1, 0)
    page = _get(server, "/?q=run-", "ada").text
    assert "<th>erased</th><th>missing</th>" in page
    assert '<td class="erased">0</td><td class="missing"><b class="error">1</b></td>' in page
    assert '<td class="erased">1</td><td class="missing">0</td>' in page
    assert "bob" not in str(_get(server, "/api/executions", "alice").json())  # counts of readable rows only


@pytest.mark.parametrize("query", ["", "&step=s0"])
def test_an_erased_part_shows_when_why_and_by_whom_and_its_standing(server, query):
    document = _get(server, f"/api/executions/run-gone?tenant=acme{query}", "alice").json()
    (part,) = document["steps"][0]["attempts"][0]["parts"]
    assert part["status"] == "erased" and part["standing"] == "signed"
    erasure = part["erasure"]
    assert (erasure["by"], erasure["reason"], erasure["standing"]) == ("dpo", "gdpr-17", "signed")
    when = dt.datetime.fromtimestamp(erasure["time"] / 1e9, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    page = _get(server, f"/executions/run-gone?tenant=acme{query}", "alice").text
    assert f'<div class="erasure">erased {when} by <b>dpo</b>: gdpr-17 (signed)</div>' in page
    assert '<td class="standing">signed</td>' in page and "missing" not in page
    assert CANARY not in page
    if query:  # a step's page: the whole execution and the trace
        assert 'class="whole" href="/executions/run-gone?tenant=acme"' in page
        assert re.search(r'class="trace" href="http://jaeger\.local/trace/[0-9a-f]{32}"', page)


def test_a_trusted_key_that_is_not_a_hex_public_key_is_refused(tmp_path):
    pem = generate_key(tmp_path / "k.pem")
    (tmp_path / "journal").mkdir()
    (tmp_path / "tokens.toml").write_text('[tokens]\nada = "ada-token-0123456789abcdef000"\n')
    for wrong in (pem, "zz" * 32, load_public_key(tmp_path / "k.pem")[:-2]):
        with pytest.raises(ReasoningConfigError, match="trust: key 1 is not the hex of an Ed25519 public key"):
            create_app(
                tmp_path / "journal",
                FileReasoningStore(tmp_path / "store"),
                authenticator=tokens_file_authenticator(tmp_path / "tokens.toml"),
                reads_journal=tmp_path / "reads",
                trust=(wrong,),
            )
