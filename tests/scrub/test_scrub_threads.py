"""The scrubber's registry asked from several threads at once: the export thread of a batch processor,
the helper thread and the calling threads. Each question is answered with every capture queued before
it, whichever thread is entering it, and never waits on itself."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from loom_otel.core._scrub import scrub_value
from loom_otel.core._scrub._registry import registry
from loom_otel.testing import find_leaks
from tests.scrub.test_scrub_batched import THOUGHT, _pieces, _remember

SEEN = "Which museums in Paris stay open late on Thursday evenings for students"
"""What the call's request showed (not a secret), restated at the start of the thought below."""
UNSEEN = "CANARY-threads-2c9a: my own recollection of three late openings, never verified anywhere."


def _held(monkeypatch: Any, target: Callable[[], object]) -> tuple[threading.Thread, threading.Event]:
    """``target`` on a thread, held in the middle of indexing (``registry.windows.add``): the thread and
    the event that lets it go."""
    indexing, go = threading.Event(), threading.Event()
    add = registry.windows.add

    def slow_add(*args: Any, **kwargs: Any) -> Any:
        indexing.set()
        assert go.wait(60)
        return add(*args, **kwargs)

    monkeypatch.setattr(registry.windows, "add", slow_add)
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    assert indexing.wait(60)
    return thread, go


def test_a_question_asked_while_another_thread_enters_a_capture_waits_for_it(monkeypatch):
    """The export thread and a calling thread ask the registry at once: the one that finds the queue empty
    while the other is still indexing what it took off it waits for that text, never scrubs without it."""
    _remember(THOUGHT, 0xB7)
    entering, go = _held(monkeypatch, registry.has_windows)  # the capture off the queue, not yet indexed
    scrubbed: list[str] = []
    try:
        asking = threading.Thread(target=lambda: scrubbed.append(scrub_value("Thinking: " + THOUGHT, 0xB7)))
        asking.start()
        asking.join(0.5)
        waited = asking.is_alive()
    finally:
        go.set()
        entering.join(60)
    asking.join(60)
    assert waited
    assert scrubbed and find_leaks(_pieces(THOUGHT), texts=scrubbed) == []


def test_a_text_cut_around_what_its_call_showed_is_found_while_its_pieces_are_indexed(monkeypatch):
    """A record holds a run of a text whose call showed part of it: the text is indexed again as the
    pieces around what was shown (``resolve``). Another thread searching meanwhile finds the text
    whole or its pieces, never neither."""
    text = SEEN + "? " + UNSEEN
    _remember(text, 0xC1, visible={"messages": [{"role": "user", "content": SEEN + "?"}]})
    assert registry.has_windows()  # entered whole: what its call showed is read when a record holds a run
    resolving, go = _held(monkeypatch, lambda: scrub_value("log: " + text, 0xC1))
    try:
        scrubbed = scrub_value("said: " + UNSEEN, 0xC1)
    finally:
        go.set()
        resolving.join(60)
    assert "CANARY" not in scrubbed and "recollection" not in scrubbed
    assert find_leaks([UNSEEN[i : i + 40] for i in range(0, len(UNSEEN) - 40, 10)], texts=[scrubbed]) == []
    assert SEEN in scrub_value("asked: " + SEEN, 0xC1)  # resolved: what the call showed is left alone


def test_a_question_asked_on_the_thread_entering_captures_does_not_wait_for_itself(monkeypatch):
    """Reading a call's objects while its capture is entered may log, and the log record is scrubbed
    on the same thread: that question is answered, not a deadlock."""
    _remember(THOUGHT, 0xB9)
    add = registry.windows.add
    inner: list[str] = []

    def logging_add(*args: Any, **kwargs: Any) -> Any:
        inner.append(scrub_value("a log line", 0xB9))
        return add(*args, **kwargs)

    monkeypatch.setattr(registry.windows, "add", logging_add)
    entering = threading.Thread(target=registry.has_windows, daemon=True)
    entering.start()
    entering.join(60)
    assert not entering.is_alive()
    assert inner and inner[0] == "a log line"
    assert find_leaks(_pieces(THOUGHT), texts=[scrub_value("Thinking: " + THOUGHT, 0xB9)]) == []


def test_a_short_secret_added_while_another_thread_rebuilds_its_traces_needles_is_searched_for(monkeypatch):
    """Short secrets are searched for as needles of their trace, rebuilt after each change. A secret
    added while another thread rebuilds them (from what it read before) is still searched for at once."""
    from loom_otel.core._scrub import _registry

    kept = (None, None, 12)
    registry.add_text("pw-7Hq2-zz91", "[first gone]", kept, 0xC2)
    building, go = threading.Event(), threading.Event()
    dumps = _registry.json.dumps

    def slow_dumps(value: Any, **kwargs: Any) -> str:
        if threading.current_thread().name == "rebuilding":
            building.set()
            assert go.wait(60)
        return dumps(value, **kwargs)

    monkeypatch.setattr(_registry, "json", SimpleNamespace(dumps=slow_dumps))
    first: list[str] = []
    rebuilding = threading.Thread(
        target=lambda: first.append(scrub_value("token pw-7Hq2-zz91 ok", 0xC2)), name="rebuilding", daemon=True
    )
    rebuilding.start()
    try:
        assert building.wait(60)  # it read the trace's secrets: the first one only
        registry.add_text("qx-41Lm-be07", "[second gone]", kept, 0xC2)
        second = scrub_value("token qx-41Lm-be07 ok", 0xC2)
    finally:
        go.set()
        rebuilding.join(60)
    assert second == "token [second gone] ok"
    assert first == ["token [first gone] ok"]
    assert scrub_value("pw-7Hq2-zz91 and qx-41Lm-be07", 0xC2) == "[first gone] and [second gone]"


@pytest.mark.peers
@pytest.mark.parametrize("name", ["openinference", "openllmetry"])
def test_many_threads_beside_a_peer_on_a_batching_provider_export_no_thought(name, config, monkeypatch):
    """Eight threads call at once, each with a thought of its own, streamed and not, a real peer wrapped
    outside loom-otel and a batch processor exporting every few milliseconds: the export thread, the
    helper and the calling threads all ask the registry while captures are entered, and no thought or
    signature of any call is exported."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
    from loom_otel.testing.simulator import Simulator
    from tests.scrub.test_scrub import _others, _request

    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_AND_EVENT")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=5, max_export_batch_size=4))
    loom = AnthropicInstrumentor()
    loom.instrument(tracer_provider=provider, config=config, skip_dep_check=True)
    other = _others()[name]()
    other.instrumentor.instrument(tracer_provider=provider, **other.kwargs)
    canaries = [
        f"CANARY-thread-{n}-e41d: thread {n} weighs the museum's late hours against the metro." for n in range(8)
    ]
    signatures: list[str] = []
    failures: list[BaseException] = []
    start = threading.Barrier(len(canaries))

    def calls(canary: str) -> None:
        try:
            client = Simulator(reasoning_text=canary).anthropic_client()
            start.wait(60)
            for turn in range(6):
                request = _request([{"role": "user", "content": f"Museums open late, turn {turn}?"}])
                if turn % 2:
                    with client.messages.stream(**request) as streamed:
                        message = streamed.get_final_message()
                else:
                    message = client.messages.create(**request)
                signatures.extend(b.signature for b in message.content if b.type == "thinking")
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=calls, args=(canary,)) for canary in canaries]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads)
    finally:
        other.uninstrument()
        loom.uninstrument()
    assert failures == []
    assert provider.force_flush(60_000)
    theirs = [s for s in exporter.get_finished_spans() if not s.instrumentation_scope.name.startswith("loom_otel")]
    assert len(theirs) >= 48 and len(signatures) == 48
    assert find_leaks([*canaries, *signatures], spans=exporter.get_finished_spans()) == []
    provider.shutdown()
