"""Who may read is decided from the sealed blob, never from a record (DESIGN "Who may read"): the envelope
seals tenant, execution, principal and owner; a capture record, an archive line or an index row naming a
blob only points to it. A forged record (a journal line, an OTLP span sent to the collector) naming
alice's ref and digest with mallory as its principal gives mallory nothing; nor does an edited index row;
a blob sealed before the audience was reads as a part with no principal (its tenant's auditors only)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx2
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loom_otel.audit._captures import iter_captures
from loom_otel.audit._index import index_path_for
from loom_otel.core import FileReasoningStore, MemoryReasoningStore
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.core._evidence._store._sealed import MAGIC, Envelope
from loom_otel.core._reading._policy import load_policy
from loom_otel.testing import OtlpJsonFileExporter, find_leaks
from loom_otel.viewer import create_app, tokens_file_authenticator
from tests.live.conftest import Server
from tests.viewer.conftest import CANARY, Captured, bearer


def _alice(captured: Captured) -> dict[str, Any]:
    """Alice's capture record's attributes, as the journal holds them."""
    (record,) = [r for r in iter_captures(captured.journal) if r.execution_id == "run-alice"]
    assert record.principal == "alice"
    return {
        "loom.execution.id": record.execution_id,
        "loom.step.id": record.step_id,
        "loom.attempt": record.attempt + 1,
        "loom.tenant": "acme",
        "gen_ai.provider.name": record.provider,
        "gen_ai.request.model": record.request_model,
        "gen_ai.response.model": record.response_model,
        "loom.reasoning.part.kind": list(record.kinds),
        "loom.reasoning.part.ref": list(record.refs),
        "loom.reasoning.part.digest": list(record.digests),
        "loom.reasoning.part.size": list(record.sizes),
        "loom.reasoning.part.omitted": list(record.omitted),
        "loom.principal": "mallory",  # the forgery: alice's blob, mallory's name
    }


def _serve(captured: Captured, source: Path, reads: Path) -> Server:
    return Server(
        create_app(
            source,
            FileReasoningStore(captured.root / "store"),
            authenticator=tokens_file_authenticator(captured.tokens),
            reads_journal=reads,
            policy=load_policy(captured.policy),
        )
    )


def _status(server: Server, principal: str, path: str = "/api/executions/run-alice?tenant=acme") -> int:
    answer = httpx2.get(f"{server.url}{path}", headers=bearer(principal), timeout=30)
    if principal == "mallory":
        assert CANARY not in answer.text
    return answer.status_code


def _only_the_audience_reads(server: Server) -> None:
    assert _status(server, "mallory") == 404
    assert _status(server, "mallory", "/executions/run-alice?tenant=acme") == 404
    assert _status(server, "alice") == 200 and _status(server, "ada") == 200  # ada audits tenant acme
    text = httpx2.get(f"{server.url}/api/executions/run-alice?tenant=acme", headers=bearer("ada"), timeout=30).text
    assert CANARY in text  # the auditor reads both records, the forged one included (alice's blob)


def test_a_forged_journal_line_naming_alices_blob_gives_mallory_nothing(captured: Captured, tmp_path: Path):
    forger = Journal(captured.journal, checkpoint_key=None)  # anyone who can append to the journal
    forger.append("capture", _alice(captured))
    forger.close()
    assert any(r.principal == "mallory" for r in iter_captures(captured.journal))
    with _serve(captured, captured.journal, tmp_path / "reads") as server:
        _only_the_audience_reads(server)
    assert not find_leaks([CANARY], directories=[tmp_path / "reads"])


def test_a_forged_journal_line_gives_mallory_no_evidence_bundle(captured: Captured, tmp_path: Path):
    """The execution page's Download evidence runs the same rule: the forged record names alice's blob,
    whose sealed audience refuses mallory, so mallory gets the page's 404 and no text."""
    forger = Journal(captured.journal, checkpoint_key=None)
    forger.append("capture", _alice(captured))
    forger.close()
    with _serve(captured, captured.journal, tmp_path / "reads") as server:
        path = "/executions/run-alice/evidence?tenant=acme"
        assert _status(server, "mallory", path) == 404
        answer = httpx2.get(f"{server.url}{path}", headers=bearer("alice"), timeout=30)
        assert answer.status_code == 200 and CANARY in answer.text


def test_a_forged_otlp_span_in_the_collector_archive_gives_mallory_nothing(captured: Captured, tmp_path: Path):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("forger").start_as_current_span("chat claude") as span:
        span.add_event("loom.reasoning.captured", _alice(captured))  # one span anyone can send to a collector
    archive = tmp_path / "collector" / "traces.jsonl"
    archive.parent.mkdir()
    OtlpJsonFileExporter(archive).export([*captured.spans, *exporter.get_finished_spans()])
    assert any(r.principal == "mallory" for r in iter_captures(archive))
    with _serve(captured, archive, tmp_path / "reads") as server:
        _only_the_audience_reads(server)


def test_an_edited_index_row_gives_mallory_nothing(captured: Captured, tmp_path: Path):
    with _serve(captured, captured.journal, tmp_path / "reads") as server:
        assert _status(server, "alice") == 200  # the index is built
        index = index_path_for(captured.journal)
        with sqlite3.connect(index) as db:
            changed = db.execute(
                "UPDATE records SET principal='mallory' WHERE execution_id='run-alice' AND principal='alice'"
            ).rowcount
        assert changed == 1
        assert _status(server, "mallory") == 404
        assert _status(server, "alice") == 200 and _status(server, "ada") == 200


def test_the_envelope_seals_principal_and_owner(captured: Captured):
    store = FileReasoningStore(captured.root / "store")
    (record,) = [r for r in iter_captures(captured.journal) if r.execution_id == "run-alice"]
    opened = store.unsealed(record.refs[0], tenant="acme", execution_id="run-alice")
    assert opened is not None and (opened.principal, opened.owner) == ("alice", None)
    assert store.unsealed(record.refs[0], tenant="acme", execution_id="run-bob") is None
    memory = MemoryReasoningStore()
    envelope = Envelope.seal("text", execution_id="e", tenant="t", principal="alice", owner="olga")
    memory.put(envelope)
    opened = memory.unsealed(envelope.ref, tenant="t", execution_id="e")
    assert opened is not None and (opened.body, opened.principal, opened.owner) == (b"text", "alice", "olga")
    # the audience is part of the address: the same text sealed for bob is another blob
    assert Envelope.seal("text", execution_id="e", tenant="t", principal="bob").ref != envelope.ref
    assert b'"principal":"alice"' in b"".join(envelope.sealed())


@pytest.mark.parametrize("reader", ["alice", "ada"])
def test_a_blob_sealed_before_the_audience_reads_as_no_principals(captured: Captured, tmp_path: Path, reader: str):
    """The old format (no principal in the header): alice's record names her, but the blob decides."""
    from loom_otel.core._evidence._store._sealed import unseal_audience

    store = FileReasoningStore(captured.root / "store")
    (record,) = [r for r in iter_captures(captured.journal) if r.execution_id == "run-alice"]
    ref = record.refs[0]
    sealed = store.sealed_blob(ref)
    assert sealed is not None
    end = sealed.index(b"\n", len(MAGIC))
    header = json.loads(sealed[len(MAGIC) : end])
    old = {k: v for k, v in header.items() if k not in ("principal", "owner")}
    store.delete(ref)
    store.write_sealed_blob(ref, MAGIC + json.dumps(old, sort_keys=True).encode() + sealed[end:])
    opened = unseal_audience(store.sealed_blob(ref) or b"", "acme", "run-alice")
    assert opened is not None and opened.principal is None and CANARY.encode() in opened.body
    with _serve(captured, captured.journal, tmp_path / "reads") as server:
        assert _status(server, reader) == (200 if reader == "ada" else 404)
