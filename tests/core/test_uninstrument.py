"""Issue 27 point 3 / DESIGN "Audit journal, chained exporter, verification": ``uninstrument()`` stops
loom-otel's background work for that configuration and leaves the file system alone. After it (and the
tracer provider's shutdown), a ``TemporaryDirectory`` holding the store and the journal cleans up, no
loom-otel thread is left running, the journal lets its origin go (``loom-otel forward`` may deliver it),
and what was owed is on disk; ``loom_otel.testing.reset_runtime`` closes what loom-otel opened."""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor

from loom_otel.core import ReasoningConfig, execution
from loom_otel.core._evidence._journal._reader import iter_records, list_origins, origin_is_live
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import Telemetry, find_leaks, reset_runtime
from loom_otel.testing.simulator import Simulator
from tests.google_genai import helpers as genai_helpers
from tests.openai import helpers as openai_helpers

CANARY = "CANARY-uninstrument-0c7d"
BACKGROUND = ("loom-otel-scope-pool", "loom-otel-journal-commit", "loom-otel-journal-checkpoint")
"""The names of the threads loom-otel's store and journal run in the background."""


def anthropic_call(sim: Simulator) -> None:
    sim.anthropic_client().messages.create(
        model="claude-sonnet-4-6",
        max_tokens=4096,
        thinking={"type": "enabled", "budget_tokens": 2048},
        messages=[{"role": "user", "content": "hello"}],
    )


def genai_call(sim: Simulator) -> None:
    genai_helpers.run("sync", sim.genai_client())


def openai_call(sim: Simulator) -> None:
    openai_helpers.run("responses", "sync", lambda is_async: sim.openai_client())


VENDORS: dict[str, tuple[Callable[[], BaseInstrumentor], Callable[[Simulator], None]]] = {
    "anthropic": (AnthropicInstrumentor, anthropic_call),
    "google-genai": (GoogleGenAiInstrumentor, genai_call),
    "openai": (OpenAiInstrumentor, openai_call),
}


def running() -> list[str]:
    """The loom-otel store and journal threads alive now."""
    return [t.name for t in threading.enumerate() if t.name in BACKGROUND]


def background_threads() -> list[str]:
    """The loom-otel store and journal threads still alive, after giving stopped ones time to end
    (they were told to stop; how soon they are scheduled depends on the machine's load)."""
    deadline = time.monotonic() + 30
    while True:
        alive = running()
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def ready_entries(store_dir: Path) -> list[Path]:
    """What the store's pools hold (ready scope directories and packs, made in the background)."""
    pools = store_dir / "blobs" / ".pools"
    return sorted(pools.rglob("*")) if pools.exists() else []


def calls(sim: Simulator, call: Callable[[Simulator], None]) -> None:
    call(sim)  # the shared shard packs
    with execution("named-run"):  # a directory of its own: the pool makes ready ones
        call(sim)


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    reset_runtime()
    yield
    reset_runtime()


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_uninstrument_stops_background_work_and_the_directory_cleans_up(vendor: str) -> None:
    make, call = VENDORS[vendor]
    sim = Simulator(reasoning_text=CANARY)
    telemetry = Telemetry.in_memory()
    with tempfile.TemporaryDirectory() as tmp:  # its cleanup fails (ENOTEMPTY) if something still writes
        store_dir = Path(tmp) / "store"
        instrumentor = make()
        instrumentor.instrument(
            tracer_provider=telemetry.provider, config=ReasoningConfig(store=f"file://{store_dir}"), skip_dep_check=True
        )
        try:
            calls(sim, call)
            assert running(), "the store and the journal work in the background while instrumented"
        finally:
            instrumentor.uninstrument()
        telemetry.provider.shutdown()
        assert background_threads() == []
        assert ready_entries(store_dir) == []  # the pool's ready directories and packs are gone
        journal = store_dir / "journal"
        (origin,) = list_origins(journal)
        assert not origin_is_live(journal / origin)  # its lock released: `loom-otel forward` may send it
        records = list(iter_records(journal))
        assert [r["type"] for r in records].count("capture") == 2
        assert records[-1]["type"] == "checkpoint"  # what it owed was flushed: the chain is anchored
        time.sleep(0.2)  # nothing writes any more: what is there stays as it is
        assert ready_entries(store_dir) == [] and background_threads() == []
        assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal]) == []


def test_an_instrumentor_still_instrumented_keeps_the_shared_store_running() -> None:
    """Two vendors on one configuration: uninstrumenting one leaves the other's store and journal working."""
    sim = Simulator(reasoning_text=CANARY)
    telemetry = Telemetry.in_memory()
    with tempfile.TemporaryDirectory() as tmp:
        store_dir = Path(tmp) / "store"
        config = ReasoningConfig(store=f"file://{store_dir}")
        first, second = AnthropicInstrumentor(), OpenAiInstrumentor()
        for instrumentor in (first, second):
            instrumentor.instrument(tracer_provider=telemetry.provider, config=config, skip_dep_check=True)
        try:
            calls(sim, anthropic_call)
            first.uninstrument()
            journal = store_dir / "journal"
            (origin,) = list_origins(journal)
            assert origin_is_live(journal / origin)  # still the other instrumentor's
            calls(sim, openai_call)
        finally:
            first.uninstrument()
            second.uninstrument()
        assert background_threads() == [] and ready_entries(store_dir) == []
        assert not origin_is_live(journal / origin)
        assert [r["type"] for r in iter_records(journal)].count("capture") == 4


def test_reset_runtime_closes_what_loom_otel_opened() -> None:
    """Still instrumented (a test that forgot to uninstrument): ``reset_runtime`` closes the store and
    the journal; the next call reopens them."""
    sim = Simulator(reasoning_text=CANARY)
    telemetry = Telemetry.in_memory()
    instrumentor = AnthropicInstrumentor()
    with tempfile.TemporaryDirectory() as tmp:
        store_dir = Path(tmp) / "store"
        instrumentor.instrument(
            tracer_provider=telemetry.provider, config=ReasoningConfig(store=f"file://{store_dir}"), skip_dep_check=True
        )
        try:
            calls(sim, anthropic_call)
            reset_runtime()
            assert background_threads() == [] and ready_entries(store_dir) == []
            calls(sim, anthropic_call)  # reopened on the next write
            assert [r["type"] for r in iter_records(store_dir / "journal")].count("capture") == 4
        finally:
            instrumentor.uninstrument()
        assert background_threads() == [] and ready_entries(store_dir) == []
