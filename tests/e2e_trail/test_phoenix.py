"""Done-means: application -> ChainedSpanExporter -> rotel (a real collector hop) -> Arize Phoenix; the
``loom.reasoning.captured`` event with its reference/digest attributes is read back from Phoenix's REST
API, and the reasoning text (a canary) is nowhere in Phoenix."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from loom_otel.core import MemoryReasoningStore, Reasoning, ReasoningConfig, ReasoningKind, Runtime
from loom_otel.core._calls._capture import capture
from loom_otel.core._journal._writer import Journal
from loom_otel.exporters.chain import ChainedSpanExporter

from .receiver import free_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PROJECT = "loom-e2e"
CANARY = "CANARY-phoenix-reasoning-5d1e"


def phoenix_executable() -> str | None:
    configured = os.environ.get("LOOM_OTEL_TEST_PHOENIX")
    candidates = [configured] if configured else []
    candidates.append(str(ROOT / ".ci" / ".cache" / "phoenix-venv" / "bin" / "phoenix"))
    return next((c for c in candidates if c and Path(c).is_file()), None)


def rotel_executable() -> str | None:
    try:
        import rotel
    except ImportError:
        return shutil.which("rotel-agent")
    path = Path(rotel.__file__).parent / "rotel-agent"
    return str(path) if path.is_file() else shutil.which("rotel-agent")


def get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def wait_until(check, timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as exc:  # the server is still starting
            last = exc
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what} ({last!r})")


@contextlib.contextmanager
def running_phoenix(work: Path) -> Iterator[tuple[str, int]]:
    """``phoenix serve`` on loopback ports with its database in ``work``: (REST base URL, OTLP gRPC port)."""
    exe = phoenix_executable()
    if exe is None:
        pytest.skip("Arize Phoenix is not installed (.ci/install-e2e.sh, or LOOM_OTEL_TEST_PHOENIX)")
    http_port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work / "phoenix"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(http_port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    with (work / "phoenix.log").open("wb") as log:
        proc = subprocess.Popen([exe, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{http_port}"
        try:
            wait_until(lambda: get_json(f"{base}/v1/projects"), 300, "Phoenix to start")  # minutes on a busy machine
            yield base, grpc_port
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture
def phoenix(tmp_path: Path) -> Iterator[tuple[str, int]]:
    with running_phoenix(tmp_path) as server:
        yield server


@pytest.fixture
def rotel(tmp_path: Path, phoenix: tuple[str, int]) -> Iterator[str]:
    exe = rotel_executable()
    if exe is None:
        pytest.skip("rotel is not installed (pip install rotel)")
    grpc_port, http_port = free_port(), free_port()
    log = (tmp_path / "rotel.log").open("wb")
    proc = subprocess.Popen(
        [
            exe,
            "start",
            "--otlp-grpc-endpoint",
            f"127.0.0.1:{grpc_port}",
            "--otlp-http-endpoint",
            f"127.0.0.1:{http_port}",
            "--exporter",
            "otlp",
            "--otlp-exporter-endpoint",
            f"http://127.0.0.1:{phoenix[1]}",
            "--otlp-exporter-protocol",
            "grpc",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        import socket

        def listening() -> bool:
            with socket.create_connection(("127.0.0.1", grpc_port), timeout=1):
                return True

        wait_until(listening, 30, "rotel to listen")
        yield f"127.0.0.1:{grpc_port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_capture_event_reaches_phoenix_through_rotel_without_reasoning_text(
    tmp_path: Path, phoenix: tuple[str, int], rotel: str
) -> None:
    journal = Journal(tmp_path / "journal", durability="batch", checkpoint_key=None)
    runtime = Runtime.resolve(ReasoningConfig(store=MemoryReasoningStore(), journal=journal))
    exporter = ChainedSpanExporter(OTLPSpanExporter(endpoint=rotel, insecure=True), journal=journal)
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": PROJECT}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    with provider.get_tracer("e2e").start_as_current_span("chat m") as span:
        result = capture(
            runtime,
            span,
            [Reasoning(ReasoningKind.TEXT, "anthropic", text=CANARY, signature="sig")],
            provider="anthropic",
            request_model="m",
            response_model="m",
        )
    assert result is not None
    provider.shutdown()
    base = phoenix[0]

    def captured_event() -> dict | None:
        body = get_json(f"{base}/v1/projects/{PROJECT}/spans?limit=100")
        for s in body["data"]:
            for event in s.get("events") or []:
                if event.get("name") == "loom.reasoning.captured":
                    return {"span": s, "event": event, "all": body}
        return None

    found = wait_until(captured_event, 120, "the captured event in Phoenix")
    attributes = found["event"]["attributes"]
    (part,) = result.parts
    assert attributes["loom.reasoning.part.digest"] == [part.digest]
    assert attributes["loom.reasoning.part.ref"] == [part.text_ref]
    assert attributes["loom.audit.seq"] == 1 and attributes["loom.audit.origin"] == journal.origin
    assert CANARY not in json.dumps(found["all"])  # not in any span, attribute or event Phoenix serves
    stored = [p for p in (tmp_path / "phoenix").rglob("*") if p.is_file()]
    assert stored and not any(CANARY.encode() in p.read_bytes() for p in stored)  # nor in its database
