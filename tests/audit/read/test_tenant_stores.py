"""Per-tenant stores (ADR D7, data residency) read back: a tenant whose policy entry names its own store
has its blobs there only, and ``audit show``, ``verify --store``, ``erase`` and ``retain`` find them there."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from loom_otel.cli.__main__ import build_parser
from loom_otel.core import FileReasoningStore, ReasoningConfig, execution
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import request

CANARY = "CANARY-residency-a7f2"


def cli(*argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    code = args.func(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def captured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    eu = tmp_path / "eu-store"
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[tenants.eu]\nstore = "file://{eu}"\nretention = "1s"\n')
    monkeypatch.setenv("LOOM_OTEL_POLICY", str(policy))
    config = ReasoningConfig(store=f"file://{tmp_path / 'store'}", journal=tmp_path / "journal")
    sim = Simulator(reasoning_text=f"Think first. {CANARY}")
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with execution("run-eu", tenant="eu", principal="ana"):
            sim.anthropic_client().messages.create(**request())
        with execution("run-us", tenant="us"):
            sim.anthropic_client().messages.create(**request())
    eu_event, _ = reasoning_events(telemetry.spans)
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path / "journal"]) == []
    return {
        "store": f"file://{tmp_path / 'store'}",
        "journal": str(tmp_path / "journal"),
        "eu": str(eu),
        "ref": eu_event["loom.reasoning.part.ref"][0],
        "policy": str(policy),
    }


def test_show_and_verify_find_a_tenant_s_blobs_in_its_own_store(captured):
    blob = FileReasoningStore(Path(captured["eu"])).get(captured["ref"], tenant="eu", execution_id="run-eu")
    assert blob is not None and CANARY in blob.decode()  # kept there ...
    default = FileReasoningStore(Path(captured["store"].removeprefix("file://")))
    assert default.get(captured["ref"], tenant="eu", execution_id="run-eu") is None  # ... and only there
    common = ("--store", captured["store"], "--journal", captured["journal"])
    code, out, err = cli("audit", "show", "--execution", "run-eu", "--tenant", "eu", "--text", *common)
    assert code == 0, err
    assert CANARY in out and "1 ok" in out
    code, out, err = cli("verify", captured["journal"], "--store", captured["store"])
    assert code == 0, out + err
    assert find_leaks([CANARY], texts=[err]) == []


def test_erase_removes_a_tenant_s_blobs_from_its_own_store(captured):
    eu = FileReasoningStore(Path(captured["eu"]))
    common = ("--store", captured["store"], "--journal", captured["journal"])
    code, out, err = cli("erase", "--execution", "run-eu", "--tenant", "eu", *common)
    assert code == 0, err
    assert eu.get(captured["ref"], tenant="eu", execution_id="run-eu") is None
    assert not eu.exists(captured["ref"])
    code, out, err = cli("audit", "show", "--execution", "run-eu", "--tenant", "eu", "--text", *common)
    assert "erased" in out and CANARY not in out + err
    code, out, err = cli("audit", "show", "--execution", "run-us", "--tenant", "us", "--text", *common)
    assert code == 0 and CANARY in out  # the other tenant's, in the configured store, untouched


def test_retain_erases_in_the_tenant_s_own_store(captured):
    import time

    eu = FileReasoningStore(Path(captured["eu"]))
    time.sleep(1.5)  # the eu tenant keeps reasoning for 1s
    code, _out, err = cli(
        "retain", "--policy", captured["policy"], "--store", captured["store"], "--journal", captured["journal"]
    )
    assert code == 0, err
    assert not eu.exists(captured["ref"])


def test_serve_shows_a_tenant_s_text_from_its_own_store(captured, tmp_path):
    import httpx2

    from loom_otel.viewer._settings import ServeSettings
    from tests.live.conftest import Server

    token = "ana-token-0123456789abcdef0123"
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[tokens]\nana = "{token}"\n')
    settings = ServeSettings(
        source=captured["journal"],
        store=captured["store"],
        reads_journal=str(tmp_path / "reads"),
        policy=captured["policy"],
        tokens=str(tokens),
    )
    with Server(settings.app()) as running:
        page = httpx2.get(
            f"{running.url}/executions/run-eu?tenant=eu", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
    assert page.status_code == 200 and CANARY in page.text
