"""Capture decided per call (ADR D1, D3, D7) at the Anthropic seam, in every call mode: the capture
predicate, ``execution(capture=False)`` and ``execution(store=...)``, a predicate that raises, and a
tenant's own store from the policy file."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from loom_otel.core import (
    FileReasoningStore,
    LoomOtelWarning,
    MemoryReasoningStore,
    ReasoningCaptureError,
    ReasoningConfig,
    execution,
)
from loom_otel.core._runtime._hooks import CaptureCall
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request

CANARY = "CANARY-percall-41c7-thinking"
MODE_NAMES = list(MODES)


@pytest.fixture
def sim() -> Simulator:
    return Simulator(reasoning_text=f"Check the forecast first. {CANARY}")


def _kept(store: MemoryReasoningStore, event: dict, tenant: str | None) -> bool:
    (ref,) = event["loom.reasoning.part.ref"]
    if not ref:
        return False
    blob = store.get(ref, tenant=tenant, execution_id=event["loom.execution.id"])
    return blob is not None and CANARY in blob.decode()


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_the_predicate_and_the_execution_decide_each_call(mode, sim, store, journal_dir, caplog):
    caplog.set_level(logging.DEBUG)
    asked: list[CaptureCall] = []

    def keep(call: CaptureCall) -> bool:
        asked.append(call)
        return call.tenant != "opted-out"

    own = MemoryReasoningStore()
    config = ReasoningConfig(store=store, journal=journal_dir, capture=keep)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with execution("kept", tenant="acme", principal="ana"):
            MODES[mode](sim, request())
        with execution("declined", tenant="opted-out"):
            MODES[mode](sim, request())
        with execution("off", tenant="acme", capture=False):  # the execution wins; the predicate is not asked
            MODES[mode](sim, request())
        with execution("own", tenant="acme", store=own):
            MODES[mode](sim, request())
    kept, declined, off, elsewhere = reasoning_events(telemetry.spans)
    assert [(c.provider, c.model, c.tenant, c.execution_id, c.principal) for c in asked] == [
        ("anthropic", "claude-sonnet-4-6", "acme", "kept", "ana"),
        ("anthropic", "claude-sonnet-4-6", "opted-out", "declined", None),
        ("anthropic", "claude-sonnet-4-6", "acme", "own", None),
    ]
    assert _kept(store, kept, "acme") and kept["loom.reasoning.part.omitted"] == (False,)
    for event in (declined, off):
        assert event["loom.reasoning.part.omitted"] == (True,) and event["loom.reasoning.part.ref"] == ("",)
    assert _kept(own, elsewhere, "acme") and not _kept(store, elsewhere, "acme")
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text]) == []


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_a_predicate_that_raises_fails_the_call_closed(mode, sim, store, journal_dir, caplog):
    def broken(call: CaptureCall) -> bool:
        raise RuntimeError(f"policy service down {call.execution_id}")

    config = ReasoningConfig(store=store, journal=journal_dir, capture=broken)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with pytest.raises(ReasoningCaptureError, match="capture predicate raised RuntimeError") as info:
            MODES[mode](sim, request())
    assert reasoning_events(telemetry.spans) == []
    assert len(store) == 0
    (span,) = [s for s in telemetry.spans if s.name.startswith("chat")]
    assert span.attributes["error.type"] == "ReasoningCaptureError"
    assert find_leaks([CANARY], spans=telemetry.spans, texts=[str(info.value), caplog.text]) == []


def _policy(tmp_path: Path, stores: dict[str, str]) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text("".join(f'[tenants.{name}]\nstore = "{url}"\n' for name, url in stores.items()))
    return path


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_a_tenant_s_texts_go_only_to_its_own_store(mode, sim, store, journal_dir, tmp_path, monkeypatch, caplog):
    from loom_otel.core import FileReasoningStore

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    eu = tmp_path / "eu-store"
    policy = _policy(tmp_path, {"eu": f"file://{eu}", "down": f"file://{blocker}/store"})
    monkeypatch.setenv("LOOM_OTEL_POLICY", str(policy))
    with instrumented(AnthropicInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)) as telemetry:
        with execution("in-eu", tenant="eu"):
            MODES[mode](sim, request())
        with pytest.raises(ReasoningCaptureError) as info, execution("in-down", tenant="down"):
            MODES[mode](sim, request())
        with execution("in-us", tenant="us"):  # another tenant's outage is not this one's
            MODES[mode](sim, request())
    in_eu, in_us = reasoning_events(telemetry.spans)
    (ref,) = in_eu["loom.reasoning.part.ref"]
    blob = FileReasoningStore(eu).get(ref, tenant="eu", execution_id="in-eu")
    assert blob is not None and CANARY in blob.decode()
    assert store.get(ref, tenant="eu", execution_id="in-eu") is None
    assert _kept(store, in_us, "us")
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir], texts=[str(info.value)]) == []


@pytest.mark.parametrize("mode", ["sync", "stream", "async_messages.stream"])
def test_an_execution_s_own_store_keeps_its_text_where_none_is_configured(mode, sim, journal_dir, tmp_path, caplog):
    own = tmp_path / "own-store"
    with (
        pytest.warns(LoomOtelWarning, match="no reasoning store is configured"),
        instrumented(AnthropicInstrumentor(), config=ReasoningConfig(journal=journal_dir)) as telemetry,
    ):
        with execution("mine", store=f"file://{own}"):
            MODES[mode](sim, request())
        MODES[mode](sim, request())  # outside it: nothing kept
    mine, other = reasoning_events(telemetry.spans)
    assert _kept(FileReasoningStore(own), mine, None) and other["loom.reasoning.part.omitted"] == (True,)
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text]) == []
