"""Capture decided per call (ADR D1, D3, D7) at the Gemini seam, in every call mode: the capture
predicate, ``execution(capture=False)`` and ``execution(store=...)``, a predicate that raises, and a
tenant's own store from the policy file."""

from __future__ import annotations

import logging

import pytest

from loom_otel.core import (
    FileReasoningStore,
    MemoryReasoningStore,
    ReasoningCaptureError,
    ReasoningConfig,
    execution,
)
from loom_otel.core._runtime._hooks import CaptureCall
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from tests.google_genai.helpers import MODEL, MODES, THOUGHT, run

CANARY = THOUGHT  # the simulator's thought text carries the canary (CANARY-thought-9d2e)


def _kept(store: MemoryReasoningStore | FileReasoningStore, event: dict, tenant: str | None) -> bool:
    (ref,) = event["loom.reasoning.part.ref"]
    if not ref:
        return False
    blob = store.get(ref, tenant=tenant, execution_id=event["loom.execution.id"])
    return blob is not None and blob.decode() == THOUGHT


@pytest.mark.parametrize("mode", MODES)
def test_the_predicate_and_the_execution_decide_each_call(mode, sim, store, journal_dir, caplog):
    caplog.set_level(logging.DEBUG)
    asked: list[CaptureCall] = []

    def keep(call: CaptureCall) -> bool:
        asked.append(call)
        return call.tenant != "opted-out"

    own = MemoryReasoningStore()
    config = ReasoningConfig(store=store, journal=journal_dir, capture=keep)
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        with execution("kept", tenant="acme", principal="ana"):
            run(mode, sim.genai_client())
        with execution("declined", tenant="opted-out"):
            run(mode, sim.genai_client())
        with execution("off", tenant="acme", capture=False):
            run(mode, sim.genai_client())
        with execution("own", tenant="acme", store=own):
            run(mode, sim.genai_client())
    kept, declined, off, elsewhere = reasoning_events(telemetry.spans)
    assert [(c.provider, c.model, c.tenant, c.execution_id, c.principal) for c in asked] == [
        ("gcp.gemini", MODEL, "acme", "kept", "ana"),
        ("gcp.gemini", MODEL, "opted-out", "declined", None),
        ("gcp.gemini", MODEL, "acme", "own", None),
    ]
    assert _kept(store, kept, "acme") and kept["loom.reasoning.part.omitted"] == (False,)
    for event in (declined, off):
        assert event["loom.reasoning.part.omitted"] == (True,) and event["loom.reasoning.part.ref"] == ("",)
    assert _kept(own, elsewhere, "acme") and not _kept(store, elsewhere, "acme")
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text]) == []


@pytest.mark.parametrize("mode", MODES)
def test_a_predicate_that_raises_fails_the_call_closed(mode, sim, store, journal_dir, caplog):
    def broken(call: CaptureCall) -> bool:
        raise RuntimeError(f"policy service down {call.execution_id}")

    config = ReasoningConfig(store=store, journal=journal_dir, capture=broken)
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        with pytest.raises(ReasoningCaptureError, match="capture predicate raised RuntimeError") as info:
            run(mode, sim.genai_client())
    assert reasoning_events(telemetry.spans) == [] and len(store) == 0
    (span,) = telemetry.spans
    assert span.attributes["error.type"] == "ReasoningCaptureError"
    assert find_leaks([CANARY], spans=telemetry.spans, texts=[str(info.value), caplog.text]) == []


@pytest.mark.parametrize("mode", MODES)
def test_a_tenant_s_texts_go_only_to_its_own_store(mode, sim, store, journal_dir, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    eu = tmp_path / "eu-store"
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[tenants.eu]\nstore = "file://{eu}"\n[tenants.down]\nstore = "file://{blocker}/store"\n')
    monkeypatch.setenv("LOOM_OTEL_POLICY", str(policy))
    with instrumented(GoogleGenAiInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)) as telemetry:
        with execution("in-eu", tenant="eu"):
            run(mode, sim.genai_client())
        with pytest.raises(ReasoningCaptureError) as info, execution("in-down", tenant="down"):
            run(mode, sim.genai_client())
        with execution("in-us", tenant="us"):
            run(mode, sim.genai_client())
    in_eu, in_us = reasoning_events(telemetry.spans)
    assert _kept(FileReasoningStore(eu), in_eu, "eu")
    assert not _kept(store, in_eu, "eu") and _kept(store, in_us, "us")
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir], texts=[str(info.value)]) == []
