"""An installed SDK outside the supported range is never skipped in silence (``BaseInstrumentor`` only
logs a dependency conflict): with a store configured, every model call fails closed with one
``ReasoningConfigError`` naming the version; with none, one warning line and the calls run bare."""

from __future__ import annotations

import asyncio
import logging
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from loom_otel.core import ReasoningConfig
from loom_otel.core._calls._auto import instrument_skipped
from loom_otel.core.exceptions import ReasoningConfigError
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import request
from tests.support.instrumentors import uninstrument_every_loom_instrumentor


class _FutureFloor(AnthropicInstrumentor):
    """The same instrumentor, as if its supported range started past the installed release."""

    instruments = ("anthropic >= 99",)
    _instance = None  # a singleton of its own (``BaseInstrumentor.__new__`` reads the class attribute)


def test_a_store_configured_fails_every_call_closed_naming_the_version(store, journal_dir, caplog):
    sim = Simulator(reasoning_text="CANARY-unsupported")
    config = ReasoningConfig(store=store, journal=journal_dir)
    with instrumented(_FutureFloor(), config=config) as telemetry:
        with pytest.raises(ReasoningConfigError) as sync_error:
            sim.anthropic_client().messages.create(**request())
        with pytest.raises(ReasoningConfigError):
            sim.anthropic_client().messages.create(stream=True, **request())
        with pytest.raises(ReasoningConfigError):
            sim.anthropic_client().messages.stream(**request())
        with pytest.raises(ReasoningConfigError):
            asyncio.run(sim.async_anthropic_client().messages.create(**request()))
    assert f"anthropic {version('anthropic')} is installed" in str(sync_error.value)
    assert "anthropic >= 99" in str(sync_error.value)
    assert sim.requests == []  # nothing was sent
    assert telemetry.spans == ()
    errors = [
        r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR and "anthropic >= 99" in r.getMessage()
    ]
    assert len(errors) == 1
    message = sim.anthropic_client().messages.create(**request())  # uninstrumented: the SDK is the SDK again
    assert message.content[0].type == "thinking"


def test_no_store_warns_once_and_leaves_the_calls_bare(journal_dir, caplog):
    sim = Simulator(reasoning_text="CANARY-unsupported")
    with instrumented(_FutureFloor(), config=ReasoningConfig(journal=journal_dir)) as telemetry:
        message = sim.anthropic_client().messages.create(**request())
    assert message.content[0].type == "thinking"
    assert telemetry.spans == ()
    warnings = [r.getMessage() for r in caplog.records if "anthropic >= 99" in r.getMessage()]
    assert len(warnings) == 1
    assert f"anthropic {version('anthropic')}" in warnings[0]
    assert "not instrumented" in warnings[0]


def test_opentelemetry_instrument_runs_the_hook_after_its_instrumentors():
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    hooks = project["entry-points"]["opentelemetry_post_instrument"]
    assert hooks == {"loom_otel": "loom_otel.core._calls._auto:instrument_skipped"}


def test_the_hook_instruments_what_the_loader_skipped(monkeypatch, journal_dir):
    """``opentelemetry-instrument`` skipped loom-otel's instrumentors (no SDK of ``instruments-any`` in
    range): the hook instruments them, so an SDK outside the range gets its refusal; a disabled one
    stays off."""
    monkeypatch.setenv("LOOM_OTEL_AUDIT_JOURNAL", str(journal_dir))
    monkeypatch.setenv("LOOM_OTEL_REASONING_STORE", "memory:")
    monkeypatch.setenv("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "loom_openai , loom_google_genai")
    anthropic_instrumentor, openai_instrumentor = AnthropicInstrumentor(), OpenAiInstrumentor()
    assert not anthropic_instrumentor.is_instrumented_by_opentelemetry
    try:
        instrument_skipped()
        assert anthropic_instrumentor.is_instrumented_by_opentelemetry
        assert not openai_instrumentor.is_instrumented_by_opentelemetry
        instrument_skipped()  # once instrumented, left as it is
        assert anthropic_instrumentor.is_instrumented_by_opentelemetry
    finally:
        uninstrument_every_loom_instrumentor()  # the hook instruments every one not disabled (Bedrock too)
