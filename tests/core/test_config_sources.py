"""ADR D7: an instrumentor's own ``config`` wins field by field; each field it leaves unset comes from
``configure()``, then the environment, then the default."""

from __future__ import annotations

import logging

from loom_otel.core import MemoryReasoningStore, ReasoningConfig, configure
from loom_otel.core._runtime._config import runtime_for
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import Telemetry, find_leaks, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import request

CANARY = "CANARY-sources-5d1e-thinking"


def test_each_field_comes_from_its_own_source(monkeypatch, tmp_path):
    store = MemoryReasoningStore()
    monkeypatch.setenv("LOOM_OTEL_REASONING_TRANSCRIPT", "redact")
    monkeypatch.setenv("LOOM_OTEL_REQUEST_READABLE", "summarized")
    configure(store=store, journal=tmp_path / "journal", request_readable="off", viewer_url="https://a.example")
    runtime = runtime_for(ReasoningConfig(live=True, viewer_url="https://own.example"))
    assert runtime.live  # its own
    assert runtime.viewer_url == "https://own.example"  # its own, over configure()'s
    assert runtime.store is store and runtime.journal_dir == tmp_path / "journal"  # configure()'s
    assert runtime.request_readable == "off"  # configure()'s, over the environment
    assert runtime.transcript == "redact"  # the environment's: neither sets it
    assert runtime.digest == "sha256"  # the default


def test_without_configure_the_environment_fills_what_the_config_leaves_unset(monkeypatch):
    monkeypatch.setenv("LOOM_OTEL_REASONING_STORE", "memory:")
    runtime = runtime_for(ReasoningConfig(live=True))
    assert isinstance(runtime.store, MemoryReasoningStore) and runtime.live and runtime.keeps_text


def test_an_instrumentor_with_live_on_keeps_the_store_configure_set(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    store = MemoryReasoningStore()
    journal = tmp_path / "journal"
    configure(store=store, journal=journal)
    telemetry = Telemetry.in_memory()
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=telemetry.provider, config=ReasoningConfig(live=True), skip_dep_check=True)
    try:
        sim = Simulator(reasoning_text=f"Think first. {CANARY}")
        sim.anthropic_client().messages.create(**request())
    finally:
        instrumentor.uninstrument()
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.omitted"] == (False,)
    (ref,) = event["loom.reasoning.part.ref"]
    text = store.get(ref, tenant=None, execution_id=event["loom.execution.id"])
    assert text is not None and CANARY in text.decode()
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal], texts=[caplog.text]) == []
