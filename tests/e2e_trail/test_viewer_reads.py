"""``loom-otel serve`` forwarding its read records to a real OTLP receiver: they travel as log records
(never as root spans, which trace lists would count among the calls), each once, and ``verify --against``
the receiver's archive accounts for them; through rotel, a real collector hop, Arize Phoenix lists none of
them."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from loom_otel.audit import verify
from loom_otel.core import FileReasoningStore
from loom_otel.exporters.chain._inner import inner_from_environment
from loom_otel.exporters.chain._spans import PROJECT_KEY
from loom_otel.testing import find_leaks
from loom_otel.viewer import create_app, read_records, tokens_file_authenticator
from tests.live.conftest import Server
from tests.support.phoenix import PhoenixServer, get_json, wait_until
from tests.viewer.conftest import CANARY, bearer, capture_evidence

from .receiver import Receiver


def _serve_and_read(tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch) -> list:
    """``serve --forward`` (inner and logs from the environment, OTLP/gRPC to ``endpoint``): alice reads
    her execution, bob is refused it, alice reads it again; the read records, once the log is closed."""
    monkeypatch.setenv("LOOM_OTEL_CHAIN_INNER", "otlp_proto_grpc")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://{endpoint}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
    captured = capture_evidence(tmp_path)
    app = create_app(
        captured.journal,
        FileReasoningStore(captured.root / "store"),
        authenticator=tokens_file_authenticator(captured.tokens),
        reads_journal=tmp_path / "reads",
        forward_to=inner_from_environment(),  # as ``serve`` builds it with ``LOOM_OTEL_VIEWER_FORWARD``
    )
    with Server(app) as running:
        for reader, status in (("alice", 200), ("bob", 404), ("alice", 200)):
            response = httpx2.get(
                f"{running.url}/api/executions/run-alice?tenant=acme", headers=bearer(reader), timeout=30
            )
            assert response.status_code == status
    app.state.reads.close()
    reads = list(read_records(tmp_path / "reads"))
    assert [r.reader for r in reads] == ["alice", "bob", "alice"]
    return reads


def _received(receiver: Receiver) -> tuple[list[dict], list[dict]]:
    """The spans and the log records the receiver archived."""
    spans: list[dict] = []
    logs: list[dict] = []
    for line in receiver.path.read_text().splitlines():
        request = json.loads(line)
        for rs in request.get("resourceSpans", ()):
            spans += [s for ss in rs.get("scopeSpans", ()) for s in ss.get("spans", ())]
        for rl in request.get("resourceLogs", ()):
            logs += [r for sl in rl.get("scopeLogs", ()) for r in sl.get("logRecords", ())]
    return spans, logs


def _attribute(log: dict, key: str) -> object:
    for item in log.get("attributes", ()):
        if item["key"] == key:
            return next(iter(item["value"].values()))
    return None


def test_forwarded_read_records_are_log_records_once_and_verify_against_reads_them(
    receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    receiver.start()
    reads = _serve_and_read(tmp_path, receiver.endpoint, monkeypatch)
    spans, logs = _received(receiver)
    assert [s for s in spans if s.get("name") == "loom.audit.record"] == []
    read_logs = [log for log in logs if log.get("eventName") == "loom.reasoning.read"]
    assert sorted(int(str(_attribute(log, "loom.audit.seq"))) for log in read_logs) == sorted(r.seq for r in reads)
    report = verify(tmp_path / "reads", against=receiver.path)
    assert report.ok, report.problems
    assert not find_leaks([CANARY], texts=[receiver.path.read_text()])


@pytest.mark.slow
def test_phoenix_behind_a_collector_lists_no_read_record(
    tmp_path: Path, phoenix: PhoenixServer, rotel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    # a project of this test's own: the session's Phoenix holds other tests' traces in ``default``
    project = f"reads-{tmp_path.name}"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"{PROJECT_KEY}={project}")
    _serve_and_read(tmp_path, rotel, monkeypatch)
    sentinel = TracerProvider(resource=Resource.create())  # sent last through the same hop: once it is
    sentinel.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=rotel, insecure=True)))
    sentinel.get_tracer("test").start_span("sentinel").end()  # listed, all before it is too
    sentinel.shutdown()

    def listed() -> list[dict] | None:
        spans = get_json(f"{phoenix.base}/v1/projects/{project}/spans?limit=1000")["data"]
        return spans if any(s["name"] == "sentinel" for s in spans) else None

    spans = wait_until(listed, 120, "the sentinel in Phoenix")
    assert {s["name"] for s in spans} == {"sentinel"}  # no loom.audit.record span: no trace but the sentinel
    projects = [p["name"] for p in get_json(f"{phoenix.base}/v1/projects")["data"]]
    assert f"{project}-audit" not in projects
