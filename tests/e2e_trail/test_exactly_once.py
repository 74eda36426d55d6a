"""DESIGN "Audit journal, chained exporter, verification": where nothing failed, each record arrives
exactly once. A short-lived application (unmodified under ``opentelemetry-instrument`` with
``OTEL_TRACES_EXPORTER=loom_chain``, or setting the SDK up itself, its tracer provider global or only
given to the instrumentor) ends normally or by ``SIGTERM``
while the batch span processor still holds its calls' spans: the span pipeline is flushed before
anything still owed is resent, so a real OTLP receiver gets every journal record once, none lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from loom_otel.audit import verify
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.testing.simulator import Simulator, serve
from tests.support.instrumentors import only_loom_instrumentations

from .receiver import Receiver

pytestmark = pytest.mark.slow
APP = Path(__file__).with_name("exit_app.py")
CANARY = "CANARY-exit-delivery-41d8"
CALLS = 2  # rounds of the app: five calls each (create, stream, messages.stream, async, async stream)


def record_span_types(received: Path) -> list[str]:
    """``loom.audit.type`` of every ``loom.audit.record`` span the receiver got (records resent from the
    journal rather than carried by their calls' own spans)."""
    types = []
    for line in received.read_text().splitlines():
        for resource in json.loads(line).get("resourceSpans", ()):
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    if span["name"] == "loom.audit.record":
                        attributes = {a["key"]: a["value"] for a in span["attributes"]}
                        types.append(attributes["loom.audit.type"]["stringValue"])
    return types


def run_app(tmp_path: Path, endpoint: str, *, ending: str, setup: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOM_OTEL_", "OTEL_"))}
    store = tmp_path / "store"
    env.update(
        PYTHONPATH=os.pathsep.join([str(Path.cwd()), *sys.path]),
        ANTHROPIC_API_KEY="sim",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_BSP_SCHEDULE_DELAY="60000",  # the calls' spans are still queued when the process ends
        LOOM_OTEL_REASONING_STORE=f"file://{store}",
        LOOM_OTEL_CHAIN_INNER="otlp_proto_grpc",
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://{endpoint}",
        OTEL_EXPORTER_OTLP_INSECURE="true",
    )
    args = [sys.executable, str(APP), str(CALLS), "wait" if ending == "sigterm" else "exit"]
    if setup != "opentelemetry-instrument":
        args.append(setup)
    else:
        env.update(only_loom_instrumentations(), OTEL_TRACES_EXPORTER="loom_chain")
        args[:0] = [str(Path(sys.executable).with_name("opentelemetry-instrument"))]
    with serve(Simulator(reasoning_text=CANARY)) as server:
        env["ANTHROPIC_BASE_URL"] = server.url
        proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        first = proc.stdout.readline()
        if ending == "sigterm" and first == "done\n":
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(args, proc.returncode, first + out, err), store / "journal"


@pytest.mark.parametrize("setup", ["opentelemetry-instrument", "sdk", "sdk-private"])
@pytest.mark.parametrize("ending", ["exit", "sigterm"])
def test_every_record_arrives_once(ending: str, setup: str, receiver: Receiver, tmp_path: Path) -> None:
    receiver.start()
    done, journal = run_app(tmp_path, receiver.endpoint, ending=ending, setup=setup)
    assert done.stdout == "done\n", done.stderr
    assert done.returncode == (-signal.SIGTERM if ending == "sigterm" else 0), done.stderr
    records = list(iter_records(journal))
    assert sum(1 for r in records if r["type"] == "capture") == 5 * CALLS
    received = verify(receiver.path)
    (origin,) = received.origins
    (written,) = verify(journal).origins
    assert origin.duplicates_identical == 0 and origin.duplicates_conflicting == ()  # none twice
    assert origin.records == written.records == max(r["seq"] for r in records)  # none lost
    assert origin.gaps == () and origin.modified == () and origin.unanchored is None
    assert record_span_types(receiver.path) == []  # each capture on its call's span, no root record span
    assert receiver.logs == sum(1 for r in records if r["type"] == "checkpoint")  # checkpoints: log records
    text = receiver.path.read_text()
    assert text.count('"loom.reasoning.captured"') == 5 * CALLS
    assert CANARY not in text + done.stdout + done.stderr
