"""Where a principal comes from (DESIGN "Who may read"): ``execution(principal=...)``, else, only when
``LOOM_OTEL_PRINCIPAL_BAGGAGE`` names a key, that W3C baggage entry, which a caller of the application
sends (the server instrumentation extracts it from the request): warned once at ``instrument()``, and a
value longer than 256 characters, not printable or still percent-encoded records no principal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from opentelemetry import context
from opentelemetry.baggage.propagation import W3CBaggagePropagator

from loom_otel.core import LoomOtelWarning, ReasoningConfig, execution
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request

CANARY = "CANARY-principal-baggage-7e1d"


@pytest.fixture
def sim() -> Simulator:
    return Simulator(reasoning_text=f"Whose call is this? {CANARY}")


@contextmanager
def incoming(header: str) -> Iterator[None]:
    """The context a server instrumentation makes of a request carrying ``baggage: header``."""
    token = context.attach(W3CBaggagePropagator().extract({"baggage": header}))
    try:
        yield
    finally:
        context.detach(token)


def _principals(journal_dir: Path) -> list[object]:
    return [r["attributes"].get("loom.principal") for r in iter_records(journal_dir) if r.get("type") == "capture"]


@pytest.mark.parametrize("mode", list(MODES))
def test_no_key_by_default_a_callers_baggage_names_no_principal(mode, sim, config, journal_dir):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry, incoming("user.id=mallory"):
        MODES[mode](sim, request())
    assert _principals(journal_dir) == [None]
    (event,) = reasoning_events(telemetry.spans)
    assert "loom.principal" not in event
    assert not find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir])


def test_a_key_set_warns_once_at_instrument_and_a_normal_value_is_the_principal(sim, store, journal_dir):
    config = ReasoningConfig(store=store, journal=journal_dir, principal_baggage="user.id")
    with pytest.warns(LoomOtelWarning, match="edge overwrites it") as warned:
        with instrumented(AnthropicInstrumentor(), OpenAiInstrumentor(), config=config) as telemetry:
            with incoming("user.id=alice@example.com"):
                MODES["sync"](sim, request())
    assert len([w for w in warned if "edge overwrites it" in str(w.message)]) == 1
    assert "user.id" in str(warned[0].message)
    assert _principals(journal_dir) == ["alice@example.com"]
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.principal"] == "alice@example.com"
    assert not find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir])


def test_the_environment_names_the_key(sim, store, journal_dir, monkeypatch):
    monkeypatch.setenv("LOOM_OTEL_PRINCIPAL_BAGGAGE", "enduser.id")
    config = ReasoningConfig(store=store, journal=journal_dir)
    with pytest.warns(LoomOtelWarning, match="LOOM_OTEL_PRINCIPAL_BAGGAGE=enduser.id"):
        with instrumented(AnthropicInstrumentor(), config=config), incoming("enduser.id=bob,user.id=eve"):
            MODES["sync"](sim, request())
    assert _principals(journal_dir) == ["bob"]


REFUSED = {
    "still percent-encoded": "user.id=%2561lice",  # "%61lice" once the propagator has decoded it
    "4,000 characters": "user.id=" + "a" * 4000,
    "control characters": "user.id=alice%0D%0Aloom.principal%3Droot",  # CR LF once decoded
    "bidi override": "user.id=%E2%80%AEecila",  # U+202E once decoded: not printable
    "257 characters": "user.id=" + "b" * 257,
}


@pytest.mark.parametrize("header", list(REFUSED.values()), ids=list(REFUSED))
def test_an_unbounded_or_unprintable_value_records_no_principal_and_warns_once(header, sim, store, journal_dir):
    config = ReasoningConfig(store=store, journal=journal_dir, principal_baggage="user.id")
    with pytest.warns(LoomOtelWarning) as warned:
        with instrumented(AnthropicInstrumentor(), config=config) as telemetry, incoming(header):
            MODES["sync"](sim, request())
            MODES["sync"](sim, request())
    refused = [w for w in warned if "records no principal" in str(w.message)]
    assert len(refused) == 1
    assert "aaaa" not in str(refused[0].message) and "alice" not in str(refused[0].message)
    assert _principals(journal_dir) == [None, None]
    assert all("loom.principal" not in event for event in reasoning_events(telemetry.spans))
    assert not find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir])


def test_256_printable_characters_are_taken(sim, store, journal_dir):
    config = ReasoningConfig(store=store, journal=journal_dir, principal_baggage="user.id")
    with pytest.warns(LoomOtelWarning, match="edge overwrites it"):
        with instrumented(AnthropicInstrumentor(), config=config), incoming("user.id=" + "c" * 256):
            MODES["sync"](sim, request())
    assert _principals(journal_dir) == ["c" * 256]


def test_the_execution_scope_wins_over_baggage(sim, store, journal_dir):
    config = ReasoningConfig(store=store, journal=journal_dir, principal_baggage="user.id")
    with pytest.warns(LoomOtelWarning, match="edge overwrites it"):
        with instrumented(AnthropicInstrumentor(), config=config), incoming("user.id=mallory"):
            with execution("run-p", principal="alice"):
                MODES["sync"](sim, request())
    assert _principals(journal_dir) == ["alice"]
