"""Evidence for bundles: executions captured through the real Anthropic SDK against the simulator into
a file store and a journal with signed checkpoints; one execution is also read through the viewer's read
log and another erased."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loom_otel.audit import erase_execution, read_reasoning
from loom_otel.cli.__main__ import main
from loom_otel.core import ReasoningConfig, execution, step
from loom_otel.core._evidence._journal._checkpoint import generate_key
from loom_otel.core._evidence._store._uri import store_from_uri
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator
from loom_otel.viewer._reads import ReadLog
from tests.anthropic.modes import MODES, request

ALICE_TEXT = "CANARY-bundle-alice-4f1c reasoning of alice"
BOB_TEXT = "CANARY-bundle-bob-9e27 reasoning of bob"
ERASED_TEXT = "CANARY-bundle-erased-c3d8 reasoning later erased"


@dataclass(frozen=True)
class Evidence:
    root: Path
    store_url: str
    journal: Path
    key: Path
    public: Path
    spans: tuple[Any, ...]


def capture(config: ReasoningConfig, text: str, run: str, tenant: str, principal: str, steps: int = 1) -> list[Any]:
    sim = Simulator(reasoning_text=text)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with execution(run, tenant=tenant, principal=principal, owner=None):
            for n in range(steps):
                with step(f"s{n}"):
                    MODES["sync"](sim, request())
    return list(telemetry.spans)


def make_evidence(root: Path) -> Evidence:
    key, public = root / "key.pem", root / "key.pub"
    public.write_text(generate_key(key))
    store_url, journal = f"file://{root / 'store'}", root / "journal"
    config = ReasoningConfig(store=store_url, journal=journal, checkpoint_key=key)
    spans = capture(config, ALICE_TEXT, "run-alice", "acme", "alice", steps=2)
    spans += capture(config, BOB_TEXT, "run-bob", "globex", "bob")
    spans += capture(config, ERASED_TEXT, "run-gone", "acme", "carol")
    store = store_from_uri(store_url)
    reads = ReadLog(journal)
    reads.parts("ada-auditor", "acme", "run-alice", read_reasoning(journal, store, "run-alice", tenant="acme").parts)
    reads.close()
    erase_execution(store, "acme", "run-gone", journal=journal, reason="request")
    return Evidence(root, store_url, journal, key, public, tuple(spans))


@pytest.fixture
def evidence(tmp_path: Path) -> Evidence:
    return make_evidence(tmp_path)


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def export(evidence: Evidence, run: str, tenant: str, out: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(
        "audit", "export", "--execution", run, "--tenant", tenant, "--out", str(out),
        "--journal", str(evidence.journal), "--store", evidence.store_url, *extra,
    )  # fmt: skip


def verify_bundle(evidence: Evidence, path: Path) -> tuple[int, str, str]:
    return run_cli("verify", "--bundle", str(path), "--key", str(evidence.public))


def load(path: Path) -> dict[str, Any]:
    document = json.loads(path.read_text())
    assert isinstance(document, dict)
    return document


def save(document: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(document))
    return path
