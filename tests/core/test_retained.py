"""What a model call leaves behind for the garbage collector to walk (issue 15): the binding records (up
to 200,000) and the scrubber's queue of recent captures (up to 4,096) are kept for long, so they hold
plain tuples, which the collector stops tracking; a kept dataclass per call made every full collection
of a long-running process walk hundreds of thousands more objects."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Final

import pytest
from opentelemetry.instrumentation.utils import suppress_instrumentation

from loom_otel.core import FileReasoningStore, ReasoningConfig, execution, force_flush
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request

CANARY = "CANARY-retained-71c3"


def _tracked() -> int:
    gc.collect()
    gc.collect()  # a tuple is untracked by the collection after the one that freed what it held
    return len(gc.get_objects())


def _settled() -> int:
    """Tracked objects once the background work of the calls so far is done (blobs and records synced,
    the store's ready directories made): the least of three readings, as work still in flight on a busy
    machine (a thread's frame, a batch being written) only ever adds objects."""
    force_flush(timeout_millis=30000)
    return min(_tracked() for _ in range(3))


CALLS: Final = 100
"""Calls between the first reading and the second; the third comes after twice as many more: the slope
between the second and the third is what a call keeps, whatever the warm-up and load left behind."""


@pytest.mark.parametrize("mode", ["sync", "stream"])
def test_calls_keep_no_object_the_garbage_collector_tracks(mode, tmp_path):
    sim = Simulator(reasoning_text=f"Weigh both routes. {CANARY}")
    store = FileReasoningStore(tmp_path / "store")
    config = ReasoningConfig(store=store, journal=tmp_path / "journal")
    done = 0
    captured = 0
    leaks: list[str] = []
    readings: list[int] = []
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry, execution("one-conversation"):
        for until in (20, 20 + CALLS, 20 + 3 * CALLS):  # a warm-up (memos, open packs, the journal), then N, 2N
            while done < until:  # each keeps a binding record and queues its capture for the scrubber
                MODES[mode](sim, request(messages=[{"role": "user", "content": f"question {done}"}]))
                done += 1
            spans = telemetry.spans
            captured += len(reasoning_events(spans))
            leaks += find_leaks([CANARY], spans=spans, directories=[tmp_path / "journal"])
            del spans
            telemetry.exporter.clear()  # the exporter's list holds every finished span
            sim.reset()  # the simulator keeps every request it answered
            assert store._pool is not None and store._pool.wait_filled(10)  # its ready directories are made
            readings.append(_settled())
    assert captured == done and leaks == []
    per_call = (readings[2] - readings[1]) / (2 * CALLS)
    assert per_call < 0.25, f"{per_call:.2f} more tracked objects per call ({readings}; one per call before)"


def _counted(call: Callable[[int], object], calls: int) -> float:
    """Objects the collector counts towards its next collection per call: tracked objects made and not
    freed by the call (a young collection runs every 700; each is one more object promoted when alive)."""
    gc.collect()
    gc.disable()
    try:
        before = gc.get_count()[0]
        for n in range(calls):
            call(n)
        return (gc.get_count()[0] - before) / calls
    finally:
        gc.enable()


@pytest.mark.parametrize("mode", ["sync", "stream"])
def test_a_new_conversation_adds_few_objects_the_collector_counts(mode, tmp_path):
    """Every tracked object a call keeps (its span's event until export, a binding record, a store
    entry, the scrubber's queue) brings the next young collection, and, kept past it, the next full one
    (70-140 ms with the SDKs loaded) closer. A call counts about 22, its span (some 14 for the SDK's span
    alone) and event included; it was 32 with a key tuple per memo entry and per scope cache entry, the
    scrubber's nested tuples and the event's own tuples of kinds and flags."""
    sim = Simulator(reasoning_text=f"Weigh both routes. {CANARY}")
    config = ReasoningConfig(store=FileReasoningStore(tmp_path / "store"), journal=tmp_path / "journal")

    def call(n: int) -> object:
        return MODES[mode](sim, request(messages=[{"role": "user", "content": f"question {n}"}]))

    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        for n in range(20):
            call(n)
        with suppress_instrumentation():
            bare = _counted(call, 200)
        sim.reset()
        counted = _counted(call, 200) - bare
        spans = telemetry.spans
    assert len(reasoning_events(spans)) == 220
    assert find_leaks([CANARY], spans=spans, directories=[tmp_path / "journal"]) == []
    assert counted < 26, f"a call adds {counted:.1f} objects the collector counts"
