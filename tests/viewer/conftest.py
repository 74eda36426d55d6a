"""Evidence captured through the real Anthropic SDK and the simulator into a file store and journal,
the tokens and policy of the readers, and a viewer app over them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loom_otel.core import FileReasoningStore, ReasoningConfig, execution, step
from loom_otel.core.policy import load_policy
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator
from loom_otel.viewer import create_app, tokens_file_authenticator
from tests.anthropic.modes import MODES, request

CANARY = "CANARY-viewer-9d41e0"
HOSTILE = f'{CANARY} <b id="bold">bold</b><script>window.pwned = 1;</script><img src=x onerror="window.pwned=2">'
BOB_TEXT = "CANARY-viewer-bob-77ab reasoning of bob"
NOBODY_TEXT = "CANARY-viewer-nobody-31f5 reasoning nobody asked for"
TOKENS = {
    "alice": "alice-token-0123456789abcdef",
    "bob": "bob-token-0123456789abcdef00",
    "ada": "ada-token-0123456789abcdef000",
    "mallory": "mallory-token-0123456789abcd",
}
POLICY = '[tenants.acme]\nauditors = ["ada"]\nretention = "30d"\n'


@dataclass(frozen=True)
class Captured:
    root: Path
    store_url: str
    journal: Path
    tokens: Path
    policy: Path
    trace_id: str
    spans: tuple[Any, ...] = ()


def capture_run(
    config: ReasoningConfig,
    text: str,
    run: str,
    *,
    principal: str | None,
    steps: int = 1,
    spans: list[Any] | None = None,
) -> str:
    """Capture ``steps`` calls of execution ``run`` (tenant acme); the trace id of the first. ``spans``
    collects the finished spans (to send them to a tracing backend)."""
    sim = Simulator(reasoning_text=text)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with execution(run, tenant="acme", principal=principal, owner=None):
            for n in range(steps):
                with step(f"s{n}"):
                    MODES["sync"](sim, request())
    if spans is not None:
        spans.extend(telemetry.spans)
    span = next(s for s in telemetry.spans if any(e.name == "loom.reasoning.captured" for e in s.events))
    return f"{span.context.trace_id:032x}"


def capture_evidence(root: Path, *, viewer_url: str | None = None) -> Captured:
    store_dir, journal = root / "store", root / "journal"
    config = ReasoningConfig(store=f"file://{store_dir}", journal=journal, viewer_url=viewer_url)
    spans: list[Any] = []
    trace_id = capture_run(config, HOSTILE, "run-alice", principal="alice", spans=spans)
    capture_run(config, BOB_TEXT, "run-bob", principal="bob", spans=spans)
    capture_run(config, NOBODY_TEXT, "run-nobody", principal=None, spans=spans)
    tokens = root / "tokens.toml"
    tokens.write_text("[tokens]\n" + "".join(f'{p} = "{t}"\n' for p, t in TOKENS.items()))
    policy = root / "policy.toml"
    policy.write_text(POLICY)
    return Captured(root, f"file://{store_dir}", journal, tokens, policy, trace_id, tuple(spans))


@pytest.fixture
def captured(tmp_path: Path) -> Captured:
    return capture_evidence(tmp_path)


def bearer(principal: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[principal]}"}


def _parts(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for s in document["steps"] for a in s["attempts"] for p in a["parts"]]


def read_count(document: dict[str, Any]) -> int:
    """How many reads an execution's JSON document counts over its parts."""
    return sum(int(p["reads"]["count"]) for p in _parts(document))


def without_reads(document: dict[str, Any]) -> str:
    """An execution's JSON document but for each part's ``reads`` (each read adds one): what every worker
    and every restart must answer alike."""
    copy = json.loads(json.dumps(document))
    for part in _parts(copy):
        part.pop("reads")
    return json.dumps(copy, sort_keys=True)


def viewer_app(captured: Captured, **options: Any) -> Any:
    """The viewer's app over a captured run: its journal and store, the tokens and policy files, the
    reads journal beside them (``options``: the rest of ``create_app``'s)."""
    return create_app(
        captured.journal,
        FileReasoningStore(captured.root / "store"),
        authenticator=tokens_file_authenticator(captured.tokens),
        reads_journal=captured.root / "reads",
        policy=load_policy(captured.policy),
        **options,
    )
