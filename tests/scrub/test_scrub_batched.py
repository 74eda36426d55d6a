"""Spans only the SDK's ``BatchSpanProcessor`` takes (the usual setup) are scrubbed off the calling
thread, on the export thread, before the exporter sees them (``core/_scrub/_deferred``): beside the real
peers, for every form a thought takes in their attributes (JSON-escaped, split over attributes,
streamed over events), and when more was captured since the span ended than the scrubber's index keeps
(a helper thread, then the capturing thread, scrubs the waiting spans first)."""

from __future__ import annotations

import hashlib
import json
import random
import string
import threading
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loom_otel.core import ReasoningKind
from loom_otel.core._evidence._model import Reasoning, ReasoningPart
from loom_otel.core._scrub import _deferred, install_scrubber, remember, uninstall_scrubber
from loom_otel.core._scrub._deferred import marked
from loom_otel.core._scrub._registry import SAFE_LAG
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks
from loom_otel.testing.simulator import Simulator
from tests.scrub.test_scrub import CANARY, _others, _request

THOUGHT = (
    'CANARY-batched-7f3e: the user said "Paris\\Lyon"\nso I check both cities\' forecasts, café hours '
    "and the 🚆 timetable before answering; weather first, then trains, then a budget of forty euros. "
) * 4
"""A thought with what JSON escapes (quote, backslash, newline) and what it may escape (é, an emoji)."""


class _Owner:
    """Stands for an instrumented instrumentor (the scrubber works while one is)."""


def _batched() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A provider whose one processor batches (exports only when flushed, within a test)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=600_000))
    return provider, exporter


def _flush_elsewhere(provider: TracerProvider) -> None:
    """Export what the batch holds from another thread (as its worker does)."""
    flusher = threading.Thread(target=provider.force_flush)
    flusher.start()
    flusher.join(60)
    assert not flusher.is_alive()


def _pieces(text: str) -> list[str]:
    """40-character pieces (every 20) of ``text`` as written and JSON-escaped once and twice: any copy
    of 40 characters or more of it, in any of these forms, holds one whole."""
    forms = {text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(json.dumps(text))}
    return [form[i : i + 40] for form in forms for i in range(0, max(len(form) - 40, 1), 20)]


def _remember(text: str, trace_id: int, number: int = 1, visible: object = None) -> None:
    """Remember ``text`` as capture ``number`` of a call that showed ``visible``, as a capture does."""
    reasoning = Reasoning(ReasoningKind.TEXT, "anthropic", text=text)
    part = ReasoningPart(ReasoningKind.TEXT, "anthropic", None, f"mem://r{number}", "d" * 64, len(text))
    remember([reasoning], [part], trace_id, visible)


FORMS: dict[str, Any] = {
    "prefix in a longer value": lambda t: {"gen_ai.completion.0.content": "Thinking: " + t[: len(t) // 2]},
    "JSON, non-ASCII as is": lambda t: {"output.value": json.dumps({"content": [{"type": "text", "text": t}]})},
    "JSON, ASCII escapes": lambda t: {"output.value": json.dumps({"parts": [{"text": t}]}, ensure_ascii=True)},
    "JSON inside JSON": lambda t: {"input.value": json.dumps({"raw": json.dumps({"text": t})})},
    "split over attributes": lambda t: {"a.0": t[:150], "a.1": t[150:400], "a.2": t[400:]},
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_of_a_thought_is_scrubbed_before_the_batch_is_exported(form):
    provider, exporter = _batched()
    owner = _Owner()
    install_scrubber(owner, provider)
    try:
        _remember(THOUGHT, 0xB1)
        with provider.get_tracer("peer").start_as_current_span("chat") as span:
            span.set_attributes(FORMS[form](THOUGHT))
        assert marked() >= 1  # ended, not scrubbed on the calling thread: left to the export
        assert exporter.get_finished_spans() == ()
        _flush_elsewhere(provider)
    finally:
        uninstall_scrubber(owner)
    (exported,) = exporter.get_finished_spans()
    assert "[loom-otel reasoning text ref=mem://r1" in json.dumps(dict(exported.attributes or {}))
    assert find_leaks(_pieces(THOUGHT), spans=[exported]) == []
    assert marked() == 0
    provider.shutdown()


def test_a_thought_streamed_over_events_is_scrubbed_before_the_batch_is_exported():
    provider, exporter = _batched()
    owner = _Owner()
    install_scrubber(owner, provider)
    try:
        _remember(THOUGHT, 0xB2)
        with provider.get_tracer("peer").start_as_current_span("stream") as span:
            for at in range(0, len(THOUGHT), 25):  # deltas of fewer than 30 letters and digits each
                span.add_event("gen_ai.content.delta", {"delta": THOUGHT[at : at + 25]})
        assert marked() >= 1
        _flush_elsewhere(provider)
    finally:
        uninstall_scrubber(owner)
    (exported,) = exporter.get_finished_spans()
    deltas = "".join(str(event.attributes["delta"]) for event in exported.events)
    assert "[loom-otel reasoning text ref=mem://r1" in deltas
    assert find_leaks(_pieces(THOUGHT), spans=[exported]) == []
    provider.shutdown()


def test_a_pipeline_with_another_processor_is_scrubbed_as_the_span_ends():
    """A ``SimpleSpanProcessor`` beside the batch: its exporter sees the span at once, so nothing waits."""
    provider, _ = _batched()
    at_once = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(at_once))
    owner = _Owner()
    install_scrubber(owner, provider)
    try:
        _remember(THOUGHT, 0xB3)
        before = marked()
        with provider.get_tracer("peer").start_as_current_span("chat") as span:
            span.set_attribute("gen_ai.completion.0.content", "Thinking: " + THOUGHT)
        assert marked() == before
        (seen,) = at_once.get_finished_spans()
        assert find_leaks(_pieces(THOUGHT), spans=[seen]) == []
    finally:
        uninstall_scrubber(owner)
    provider.shutdown()


def test_spans_waiting_while_more_is_captured_than_the_index_keeps_are_scrubbed_first():
    """A span waits for its batch; then more reasoning is captured, and no span ends, than the index
    keeps (its windows of the thought would be gone by the export): the spans are scrubbed before that,
    by the scrubber's thread or the capturing one."""
    provider, exporter = _batched()
    owner = _Owner()
    install_scrubber(owner, provider)
    words = random.Random(49)
    try:
        _remember(THOUGHT, 0xB4)
        with provider.get_tracer("peer").start_as_current_span("chat") as span:
            span.set_attribute("gen_ai.completion.0.content", "Thinking: " + THOUGHT[:300])  # windows only
        captured, number = 0, 2
        while captured < 5 * SAFE_LAG:
            other = "".join(words.choices(string.ascii_letters + string.digits + " ", k=8192))
            _remember(other, 0x1000 + number, number)
            captured, number = captured + len(other), number + 1
        _flush_elsewhere(provider)
    finally:
        uninstall_scrubber(owner)
    (exported,) = exporter.get_finished_spans()
    assert find_leaks(_pieces(THOUGHT[:300]), spans=[exported]) == []
    provider.shutdown()


@pytest.mark.peers
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("name", ["openinference", "openllmetry"])
def test_a_peer_beside_loom_otel_on_a_batching_provider(name, stream, config, monkeypatch):
    """The real peers wrapped outside loom-otel, their provider batching (the benchmark's setup): the
    span waits unscrubbed on the calling thread and is exported without the thought or signature."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_AND_EVENT")
    provider, exporter = _batched()
    loom = AnthropicInstrumentor()
    loom.instrument(tracer_provider=provider, config=config, skip_dep_check=True)
    other = _others()[name]()
    other.instrumentor.instrument(tracer_provider=provider, **other.kwargs)
    client = Simulator(reasoning_text=CANARY).anthropic_client()
    try:
        request = _request([{"role": "user", "content": "Weather in Paris?"}])
        if stream:
            with client.messages.stream(**request) as streamed:
                message = streamed.get_final_message()
        else:
            message = client.messages.create(**request)
        assert marked() >= 1
    finally:
        other.uninstrument()
        loom.uninstrument()
    _flush_elsewhere(provider)  # after uninstrument(): what ended before it is still scrubbed
    signatures = [b.signature for b in message.content if b.type == "thinking"]
    theirs = [s for s in exporter.get_finished_spans() if not s.instrumentation_scope.name.startswith("loom_otel")]
    assert theirs
    assert find_leaks([CANARY, *signatures], spans=exporter.get_finished_spans()) == []
    assert marked() == 0
    provider.shutdown()


def test_spans_the_batch_processor_drops_do_not_pile_up_marked(monkeypatch):
    """A full batch queue drops spans (never exported, their marks never taken by an export): past
    ``_MAX_MARKED`` waiting, the ending span's thread scrubs them all, and the spans still exported hold
    no thought."""
    monkeypatch.setattr(_deferred, "_MAX_MARKED", 8)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_queue_size=2, max_export_batch_size=2, schedule_delay_millis=600_000)
    )
    owner = _Owner()
    install_scrubber(owner, provider)
    try:
        _remember(THOUGHT, 0xB5)
        most = 0
        for _ in range(40):
            with provider.get_tracer("peer").start_as_current_span("chat") as span:
                span.set_attribute("gen_ai.completion.0.content", "Thinking: " + THOUGHT)
            most = max(most, marked())
        assert most <= 8
        _flush_elsewhere(provider)
    finally:
        uninstall_scrubber(owner)
    assert exporter.get_finished_spans()
    assert find_leaks(_pieces(THOUGHT), spans=exporter.get_finished_spans()) == []
    assert marked() <= 8  # the spans dropped since the last scrub wait for the next one
    provider.shutdown()


def test_a_child_forked_while_a_thread_holds_the_marks_lock_scrubs_its_batched_spans():
    """``fork()`` while another thread holds the marks' lock: the child gets it back unlocked, marks its
    spans, and its export holds no thought."""
    from loom_otel.core._scrub._deferred import _lock
    from tests.support.forking import fork_runs

    provider, exporter = _batched()
    owner = _Owner()
    install_scrubber(owner, provider)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with _lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30)

        def in_child() -> None:
            _remember(THOUGHT, 0xB6)
            with provider.get_tracer("peer").start_as_current_span("chat") as span:
                span.set_attribute("gen_ai.completion.0.content", "Thinking: " + THOUGHT)
            assert marked() >= 1
            provider.force_flush()
            assert find_leaks(_pieces(THOUGHT), spans=exporter.get_finished_spans()) == []
            assert exporter.get_finished_spans()

        fork_runs(in_child)
    finally:
        release.set()
        holder.join(30)
        uninstall_scrubber(owner)
    provider.shutdown()


def _canary(n: int) -> str:
    return f"CANARY-burst-{hashlib.sha256(str(n).encode()).hexdigest()[:32]}"


def test_a_burst_of_captures_while_spans_wait_keeps_what_each_call_showed():
    """While spans wait for their batch, captures are entered late (on the export thread): what each call
    showed is kept for more of them, so the prompt a thought restated is still exported intact in a later
    span, and the rest of the thought is removed."""
    provider, exporter = _batched()
    owner = _Owner()
    install_scrubber(owner, provider)
    prompts = [f"Plan trip number {n} to Lisbon with museums trams and a budget for a family" for n in range(40)]
    try:
        with provider.get_tracer("peer").start_as_current_span("first"):
            pass  # a span waits: captures are entered late from now on
        for n, prompt in enumerate(prompts):
            thought = f"The user asks: {prompt}. {_canary(n)}, check the trams."
            reasoning = Reasoning(ReasoningKind.TEXT, "anthropic", text=thought)
            part = ReasoningPart(ReasoningKind.TEXT, "anthropic", None, f"mem://b{n}", "f" * 64, len(thought))
            remember([reasoning], [part], 0xD00 + n, visible={"messages": [{"role": "user", "content": prompt}]})
        with provider.get_tracer("peer").start_as_current_span("later") as span:
            span.set_attribute("gen_ai.input.messages", prompts[0])
            span.set_attribute("gen_ai.output.messages", f"{_canary(0)}, check the trams.")
        _flush_elsewhere(provider)
    finally:
        uninstall_scrubber(owner)
    later = next(s for s in exporter.get_finished_spans() if s.name == "later")
    assert later.attributes["gen_ai.input.messages"] == prompts[0]
    assert "CANARY-burst" not in str(later.attributes["gen_ai.output.messages"])
    provider.shutdown()


def test_a_span_a_rescue_takes_between_its_end_and_its_on_end_is_exported_scrubbed(monkeypatch):
    """Another thread's rescue takes a marked span after its readable copy is made and before the
    pipeline's ``on_end``: it scrubs the ending span, whose name and status the copy does not share, so
    the copy is scrubbed as it ends."""
    from opentelemetry.sdk.trace import Span
    from opentelemetry.trace import Status, StatusCode

    from loom_otel.core._scrub._install import _scrub_exported

    provider, exporter = _batched()
    owner = _Owner()
    install_scrubber(owner, provider)
    readable = Span._readable_span
    rescued: list[int] = []

    def copy_then_rescue(self: Any) -> Any:
        copy = readable(self)
        rescued.append(marked())
        _deferred._rescue(_scrub_exported)  # as the helper thread's, at this moment
        return copy

    monkeypatch.setattr(Span, "_readable_span", copy_then_rescue)
    try:
        _remember(THOUGHT, 0xB8)
        with provider.get_tracer("peer").start_as_current_span("chat: " + THOUGHT) as span:
            span.set_attribute("gen_ai.completion.0.content", THOUGHT)
            span.set_status(Status(StatusCode.ERROR, "gave up: " + THOUGHT))
        _flush_elsewhere(provider)
    finally:
        uninstall_scrubber(owner)
    assert rescued == [1]  # the span was marked, then taken before its on_end
    (exported,) = exporter.get_finished_spans()
    assert find_leaks(_pieces(THOUGHT), spans=[exported]) == []
    assert "[loom-otel reasoning text ref=mem://r1" in exported.name
    assert marked() == 0 and not _deferred._taken_ending
    provider.shutdown()
