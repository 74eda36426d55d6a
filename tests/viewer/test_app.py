"""``loom-otel serve``'s app over real HTTP (uvicorn on 127.0.0.1), on evidence captured through the real
SDK: who may read what, the same 404 for missing and forbidden, the JSON document of ``audit show``,
model text escaped and labelled, pagination that reads only the page, and every read recorded."""

from __future__ import annotations

import hashlib
import io
import json
import re
from argparse import Namespace

import httpx2
import pytest

from loom_otel.audit import verify
from loom_otel.cli._audit import run_show
from loom_otel.core import FileReasoningStore
from loom_otel.testing import find_leaks
from loom_otel.viewer import create_app, read_records, tokens_file_authenticator
from tests.live.conftest import Server
from tests.viewer.conftest import BOB_TEXT, CANARY, NOBODY_TEXT, TOKENS, Captured, bearer, viewer_app


def _app(captured: Captured, **kw):
    return viewer_app(captured, trace_url="http://jaeger.local/trace/{trace_id}", **kw)


@pytest.fixture
def server(captured):
    with Server(_app(captured)) as running:
        yield running


def _get(server, path, **kw) -> httpx2.Response:
    return httpx2.get(f"{server.url}{path}", timeout=30, **kw)


def test_the_api_document_is_audit_show_for_what_the_reader_may_read(server, captured):
    response = _get(server, "/api/executions/run-alice?tenant=acme", headers=bearer("alice"))
    assert response.status_code == 200
    document = response.json()
    page = document.pop("page")
    assert page == {"offset": 0, "limit": 100, "total_parts": 1, "next_offset": None, "truncated": False}
    (read,) = [p.pop("reads") for s in document["steps"] for a in s["attempts"] for p in a["parts"]]
    assert read == {"count": 1, "readers": ["alice"]}  # the viewer's own addition: who read the part
    out = io.StringIO()
    args = Namespace(
        execution="run-alice",
        step=None,
        tenant="acme",
        text=True,
        json=True,
        journal=str(captured.journal),
        store=captured.store_url,
    )
    assert run_show(args, out=out, err=io.StringIO()) == 0
    assert document == json.loads(out.getvalue())
    (part,) = document["steps"][0]["attempts"][0]["parts"]
    assert CANARY in part["text"] and part["untrusted_origin"] == "llm-reasoning:s0"


@pytest.mark.parametrize(
    ("principal", "execution_id", "readable"),
    [
        ("alice", "run-alice", True),
        ("bob", "run-alice", False),
        ("mallory", "run-alice", False),
        ("ada", "run-alice", True),  # the tenant's auditor
        ("bob", "run-bob", True),
        ("alice", "run-nobody", False),  # no principal: auditors only
        ("ada", "run-nobody", True),
        ("alice", "run-missing", False),
    ],
)
def test_who_may_read_and_the_same_404(server, principal, execution_id, readable):
    for path in (f"/api/executions/{execution_id}?tenant=acme", f"/executions/{execution_id}?tenant=acme"):
        response = _get(server, path, headers=bearer(principal))
        assert response.status_code == (200 if readable else 404), path
    if not readable:
        forbidden = _get(server, f"/api/executions/{execution_id}?tenant=acme", headers=bearer(principal))
        missing = _get(server, "/api/executions/never-was?tenant=acme", headers=bearer(principal))
        assert (
            forbidden.content == missing.content
            and forbidden.headers["content-type"] == missing.headers["content-type"]
        )
        assert not find_leaks([CANARY, BOB_TEXT, NOBODY_TEXT], texts=[forbidden.text])


def test_anonymous_and_wrong_tenant_get_404(server):
    assert _get(server, "/api/executions/run-alice?tenant=acme").status_code == 404
    assert _get(server, "/api/executions").status_code == 404
    assert _get(server, "/", headers={"Authorization": "Bearer not-a-token-at-all-000"}).status_code == 404
    assert _get(server, "/api/executions/run-alice?tenant=globex", headers=bearer("alice")).status_code == 404
    assert _get(server, "/api/executions/run-alice", headers=bearer("bob")).status_code == 404  # not his, any tenant


def test_listing_holds_only_readable_executions(server):
    listed = {r["execution_id"] for r in _get(server, "/api/executions", headers=bearer("alice")).json()}
    assert listed == {"run-alice"}
    assert {r["execution_id"] for r in _get(server, "/api/executions", headers=bearer("ada")).json()} == {
        "run-alice",
        "run-bob",
        "run-nobody",
    }
    assert _get(server, "/api/executions?tenant=globex", headers=bearer("ada")).json() == []
    page = _get(server, "/", headers=bearer("bob")).text
    assert "run-bob" in page and "run-alice" not in page


def test_model_text_is_escaped_and_labelled(server):
    page = _get(server, "/executions/run-alice?tenant=acme", headers=bearer("alice"))
    assert page.status_code == 200
    assert "<script>window.pwned" not in page.text and '<b id="bold">' not in page.text
    assert "&lt;script&gt;window.pwned = 1;&lt;/script&gt;" in page.text
    assert "Untrusted model output" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert re.search(r'href="http://jaeger\.local/trace/[0-9a-f]{32}"', page.text)


def test_sign_in_sets_a_cookie_that_reads_like_the_token(server):
    with httpx2.Client(base_url=server.url, timeout=30) as client:
        refused = client.post("/signin", data={"token": "wrong-token-000000000000", "next": "/"})
        assert refused.status_code == 401 and "loom_otel_session" not in refused.headers.get("set-cookie", "")
        signed = client.post("/signin", data={"token": TOKENS["bob"], "next": "//evil.example/"})
        assert signed.status_code == 303 and signed.headers["location"] == "/"
        assert "httponly" in signed.headers["set-cookie"].lower()
        assert client.get("/api/executions/run-bob?tenant=acme").status_code == 200
        assert client.get("/api/executions/run-alice?tenant=acme").status_code == 404


@pytest.mark.parametrize(
    "headers",
    [{"sec-fetch-site": "cross-site"}, {"sec-fetch-site": "same-site"}, {"origin": "https://evil.example"}],
    ids=["cross-site", "same-site", "foreign-origin"],
)
def test_a_page_elsewhere_cannot_sign_a_reader_in_or_out(server, headers):
    """Login CSRF: a form on another site posting someone's token would sign the reader in as them."""
    with httpx2.Client(base_url=server.url, timeout=30) as client:
        forged = client.post("/signin", data={"token": TOKENS["bob"], "next": "/"}, headers=headers)
        assert forged.status_code == 403 and "set-cookie" not in forged.headers
        assert client.get("/signout", headers=headers).status_code == 403
        own = {"sec-fetch-site": "same-origin", "origin": server.url}
        signed = client.post("/signin", data={"token": TOKENS["bob"], "next": "/"}, headers=own)
        assert signed.status_code == 303 and "loom_otel_session=" in signed.headers["set-cookie"]
        assert client.get("/signout", headers={"sec-fetch-site": "same-origin"}).status_code == 303


def test_every_read_is_a_chained_record_that_verify_covers(captured):
    app = _app(captured)
    server = Server(app).__enter__()
    assert _get(server, "/api/executions/run-alice?tenant=acme", headers=bearer("alice")).status_code == 200
    assert _get(server, "/executions/run-alice?tenant=acme", headers=bearer("ada")).status_code == 200
    assert _get(server, "/api/executions/run-alice?tenant=acme", headers=bearer("mallory")).status_code == 404
    assert _get(server, "/api/executions/run-alice?tenant=acme").status_code == 404  # anonymous: not recorded
    server.__exit__(None, None, None)
    app.state.reads.close()  # the lifespan's shutdown: a checkpoint anchors the reads
    reads = list(read_records(captured.root / "reads"))
    digest = hashlib.sha256(CANARY.encode()).hexdigest()
    assert [(r.reader, r.outcome, r.execution_id, r.tenant) for r in reads] == [
        ("alice", "ok", "run-alice", "acme"),
        ("ada", "ok", "run-alice", "acme"),
        ("mallory", "not-found", "run-alice", "acme"),
    ]
    assert reads[0].ref and reads[0].ref == reads[1].ref and len(reads[0].digest) == len(digest)
    report = verify(captured.root / "reads")
    assert report.ok, report
    assert not find_leaks([CANARY], directories=[captured.root / "reads"])
    (segment,) = [p for p in (captured.root / "reads").rglob("*") if p.is_file() and b'"read"' in p.read_bytes()]
    segment.write_bytes(segment.read_bytes().replace(b'"mallory"', b'"nobody1"'))
    tampered = verify(captured.root / "reads")
    assert not tampered.ok and any(o.modified for o in tampered.origins)


def test_a_page_of_a_thousand_parts_reads_only_what_it_shows(tmp_path, monkeypatch):
    from loom_otel.audit._index import CaptureIndex

    lines: list[int] = []
    original = CaptureIndex.read

    def counting(self, rows):
        rows = list(rows)
        lines.append(len(rows))
        return original(self, rows)

    monkeypatch.setattr(CaptureIndex, "read", counting)
    from loom_otel.core._evidence._journal import _writer

    read_writes: list[int] = []  # per write to a journal: how many read records it held
    real_write = _writer._write

    def counted_write(fd, data):
        if b'"type":"read"' in data:
            read_writes.append(data.count(b'"type":"read"'))
        return real_write(fd, data)

    monkeypatch.setattr(_writer, "_write", counted_write)
    from loom_otel.core import ReasoningConfig
    from tests.viewer.conftest import capture_run

    root = tmp_path
    config = ReasoningConfig(store=f"file://{root / 'store'}", journal=root / "journal")
    capture_run(config, "CANARY-viewer-many-0e1f", "run-many", principal="alice", steps=1000)
    (root / "tokens.toml").write_text(f'[tokens]\nalice = "{TOKENS["alice"]}"\n')

    class CountingStore(FileReasoningStore):
        gets = 0

        def unsealed(self, ref, *, tenant, execution_id):  # the viewer reads a blob with its sealed audience
            CountingStore.gets += 1
            return super().unsealed(ref, tenant=tenant, execution_id=execution_id)

    app = create_app(
        root / "journal",
        CountingStore(root / "store"),
        authenticator=tokens_file_authenticator(root / "tokens.toml"),
        reads_journal=root / "reads",
    )
    with Server(app) as running:
        first = _get(running, "/api/executions/run-many?tenant=acme&limit=50", headers=bearer("alice")).json()
        assert first["page"] == {
            "offset": 0,
            "limit": 50,
            "total_parts": 1000,
            "next_offset": 50,
            "truncated": False,
        }
        assert sum(len(a["parts"]) for s in first["steps"] for a in s["attempts"]) == 50
        assert CountingStore.gets == 50 and lines == [50]  # journal lines too: the page's only
        assert read_writes == [50]  # its 50 read records in one turn of the reads journal, one write
        last = _get(running, "/api/executions/run-many?tenant=acme&offset=990", headers=bearer("alice")).json()
        assert [s["step_id"] for s in last["steps"]] == [f"s{n}" for n in range(990, 1000)]
        assert CountingStore.gets == 60
        html = _get(running, "/executions/run-many?tenant=acme", headers=bearer("alice")).text
        assert 'rel="next"' in html and CountingStore.gets == 160


def test_a_page_holds_at_most_a_mebibyte_of_text(tmp_path):
    """Like the bounded read, a page (the JSON and the HTML) caps readable bytes as well as parts: past
    1 MiB the first parts and ``truncated``; the next page goes on where it stopped, one part at least."""
    from loom_otel.audit._bounded import MAX_BYTES
    from loom_otel.core import ReasoningConfig
    from tests.viewer.conftest import capture_run

    big = "CANARY-viewer-big-7a2c " + "x" * (300 * 1024)  # 4 of them pass 1 MiB
    config = ReasoningConfig(store=f"file://{tmp_path / 'store'}", journal=tmp_path / "journal")
    capture_run(config, big, "run-big", principal="alice", steps=6)
    (tmp_path / "tokens.toml").write_text(f'[tokens]\nalice = "{TOKENS["alice"]}"\n')
    app = create_app(
        tmp_path / "journal",
        FileReasoningStore(tmp_path / "store"),
        authenticator=tokens_file_authenticator(tmp_path / "tokens.toml"),
        reads_journal=tmp_path / "reads",
    )
    with Server(app) as running:
        first = _get(running, "/api/executions/run-big?tenant=acme", headers=bearer("alice")).json()
        texts = [p["text"] for s in first["steps"] for a in s["attempts"] for p in a["parts"]]
        assert first["page"]["truncated"] is True and first["page"]["next_offset"] == len(texts) == 3
        assert sum(len(t.encode()) for t in texts) <= MAX_BYTES
        rest = _get(running, "/api/executions/run-big?tenant=acme&offset=3", headers=bearer("alice")).json()
        assert rest["page"]["offset"] == 3 and rest["page"]["next_offset"] is None
        assert (
            rest["page"]["truncated"] is False
            and sum(len(a["parts"]) for s in rest["steps"] for a in s["attempts"]) == 3
        )
        html = _get(running, "/executions/run-big?tenant=acme", headers=bearer("alice")).text
        assert "1 MiB" in html and 'rel="next"' in html and "offset=3" in html


def test_audit_reads_lists_who_read_what(captured):
    from loom_otel.cli.__main__ import main

    app = _app(captured)
    with Server(app) as running:
        assert _get(running, "/api/executions/run-bob?tenant=acme", headers=bearer("bob")).status_code == 200
        assert _get(running, "/api/executions/run-bob?tenant=acme", headers=bearer("alice")).status_code == 404
    app.state.reads.close()
    reads_dir = str(captured.root / "reads")
    out = io.StringIO()
    from contextlib import redirect_stdout

    with redirect_stdout(out):
        assert main(["audit", "reads", "--journal", reads_dir, "--json"]) == 0
    listed = json.loads(out.getvalue())
    assert [(r["reader"], r["execution_id"], r["outcome"]) for r in listed] == [
        ("bob", "run-bob", "ok"),
        ("alice", "run-bob", "not-found"),
    ]
    table = io.StringIO()
    with redirect_stdout(table):
        assert main(["audit", "reads", "--journal", reads_dir, "--reader", "alice"]) == 0
    assert "not-found" in table.getvalue() and " ok" not in table.getvalue() and "1 read(s)" in table.getvalue()
    assert main(["audit", "reads", "--journal", reads_dir, "--reader", "nobody"]) == 3
    with redirect_stdout(io.StringIO()):
        assert main(["verify", reads_dir]) == 0


def test_read_records_are_forwarded_by_the_chained_exporter(captured):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    downstream = InMemorySpanExporter()
    app = _app(captured, forward_to=downstream)
    with Server(app) as running:
        assert _get(running, "/api/executions/run-alice?tenant=acme", headers=bearer("alice")).status_code == 200
    app.state.reads.close()  # what the app's lifespan does at its end
    assert downstream._stopped  # the chained exporter shut down, and with it the one it feeds
    app.state.reads.close()  # again: nothing more
    events = [e for s in downstream.get_finished_spans() for e in s.events if e.name == "loom.reasoning.read"]
    (read,) = [r for r in read_records(captured.root / "reads")]
    assert [(e.attributes["loom.read.reader"], e.attributes["loom.audit.seq"]) for e in events] == [("alice", read.seq)]
    assert not find_leaks([CANARY], spans=downstream.get_finished_spans())


@pytest.mark.parametrize("target", ["//evil.example/", "https://evil.example/", "/\t/evil.example", "\\\\evil", ""])
def test_sign_in_never_redirects_off_site(server, target):
    response = httpx2.post(f"{server.url}/signin", data={"token": TOKENS["alice"], "next": target}, timeout=30)
    assert response.status_code == 303 and response.headers["location"] == "/"


def test_listing_filters_by_tenant_and_time(server):
    page = _get(server, "/?tenant=globex&since=", headers=bearer("ada")).text
    assert 'name="tenant" value="globex"' in page and "run-alice" not in page
    assert "run-alice" in _get(server, "/?tenant=&since=", headers=bearer("ada")).text
    assert _get(server, "/api/executions?since=2000-01-01T00:00", headers=bearer("ada")).json()
    assert _get(server, "/api/executions?since=2999-01-01T00:00Z", headers=bearer("ada")).json() == []


def test_a_reader_never_gets_another_principals_attempt_of_the_same_step(tmp_path):
    from loom_otel.core import ReasoningConfig
    from tests.viewer.conftest import capture_run

    config = ReasoningConfig(store=f"file://{tmp_path / 'store'}", journal=tmp_path / "journal")
    capture_run(config, "CANARY-viewer-shared-alice-1c", "run-shared", principal="alice")
    capture_run(config, "CANARY-viewer-shared-bob-2d", "run-shared", principal="bob")
    (tmp_path / "tokens.toml").write_text(f'[tokens]\nalice = "{TOKENS["alice"]}"\nbob = "{TOKENS["bob"]}"\n')
    app = create_app(
        tmp_path / "journal",
        FileReasoningStore(tmp_path / "store"),
        authenticator=tokens_file_authenticator(tmp_path / "tokens.toml"),
        reads_journal=tmp_path / "reads",
    )
    with Server(app) as running:
        for reader, mine, theirs in (("alice", "alice-1c", "bob-2d"), ("bob", "bob-2d", "alice-1c")):
            response = _get(running, "/api/executions/run-shared?tenant=acme", headers=bearer(reader))
            (step_doc,) = response.json()["steps"]
            (attempt,) = step_doc["attempts"]
            assert step_doc["step_id"] == "s0" and attempt["received"] is True
            assert mine in attempt["parts"][0]["text"] and theirs not in response.text
            page = _get(running, "/executions/run-shared?tenant=acme", headers=bearer(reader)).text
            assert mine in page and theirs not in page
