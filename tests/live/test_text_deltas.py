"""Live text (``live_text=True``): the answer's streamed text deltas on their own channel (``TextDelta``),
through the same delta guards; never journaled, exported or logged, never changing what the app reads."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from loom_otel.core import (
    LoomOtelWarning,
    ReasoningConfig,
    ReasoningConfigError,
    Runtime,
    Untrusted,
    execution,
    step,
)
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import ReasoningDelta, TextDelta, flush_live
from loom_otel.live.asgi import create_app
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.live.modes import ANTHROPIC, anthropic_request
from tests.live.sse import SseReader
from tests.live.viewers import ALICE_NO_TENANT, authenticator

REASONING_CANARY = "REASONING-CANARY-b41d"
ANSWER_CANARY = "ANSWER-CANARY-7f3a"
EMAIL = re.compile(r"[\w.]+@[\w.]+\w")
QUESTION = f"Will it rain in Lyon? {ANSWER_CANARY} mail ana@example.org"
THINKING = f"{REASONING_CANARY}: the user wants the forecast, so I look it up first."


@dataclass
class Seen:
    """What the application read from the SDK stream."""

    answer: str
    thinking: str


class Sink:
    """A live sink keeping both kinds of delta apart."""

    def __init__(self) -> None:
        self.events: list[object] = []

    def __call__(self, delta: object) -> None:
        self.events.append(delta)

    @property
    def text(self) -> list[TextDelta]:
        return [e for e in self.events if isinstance(e, TextDelta)]

    @property
    def reasoning(self) -> list[ReasoningDelta]:
        return [e for e in self.events if isinstance(e, ReasoningDelta)]


def _anthropic(mode: str) -> Callable[[Simulator], Seen]:
    def run(sim: Simulator) -> Seen:
        kw = anthropic_request(messages=[{"role": "user", "content": QUESTION}])
        streamed = ANTHROPIC[mode](sim, kw)
        if mode.startswith(("create", "async create")):  # the raw events: the answer is what they carried
            assert streamed.answer == "".join(streamed.text_deltas)
        return Seen(streamed.answer, streamed.thinking)

    return run


def _gemini(sim: Simulator) -> Seen:
    from tests.google_genai.helpers import run

    outcome = run("stream", sim.genai_client(), contents=QUESTION)
    parts = [p for i in outcome.items for c in i.candidates or () for p in (c.content.parts or ()) if c.content]
    return Seen("".join(p.text or "" for p in parts if not p.thought), outcome.thought_text)


def _openai_chat(sim: Simulator) -> Seen:
    answer, thinking = [], []
    stream = sim.openai_client().chat.completions.create(
        model="deepseek-reasoner", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    for chunk in stream:
        for choice in chunk.choices:
            answer.append(choice.delta.content or "")
            thinking.append(str((choice.delta.model_extra or {}).get("reasoning_content") or ""))
    return Seen("".join(answer), "".join(thinking))


def _openai_responses(sim: Simulator) -> Seen:
    answer, thinking = [], []
    stream = sim.openai_client().responses.create(
        model="o4-mini", input=QUESTION, reasoning={"summary": "auto"}, stream=True
    )
    for event in stream:
        if event.type == "response.output_text.delta":
            answer.append(event.delta)
        elif event.type == "response.reasoning_summary_text.delta":
            thinking.append(event.delta)
    return Seen("".join(answer), "".join(thinking))


def _instrumentor(vendor: str) -> Any:
    if vendor == "gemini":
        from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor

        return GoogleGenAiInstrumentor()
    if vendor == "openai":
        from loom_otel.instrumentation.openai import OpenAiInstrumentor

        return OpenAiInstrumentor()
    return AnthropicInstrumentor()


MODES: dict[str, tuple[str, str, Callable[[Simulator], Seen]]] = {
    "anthropic create(stream=True)": ("anthropic", "anthropic", _anthropic("create(stream=True)")),
    "anthropic async create(stream=True)": ("anthropic", "anthropic", _anthropic("async create(stream=True)")),
    "anthropic messages.stream()": ("anthropic", "anthropic", _anthropic("messages.stream()")),
    "anthropic async messages.stream()": ("anthropic", "anthropic", _anthropic("async messages.stream()")),
    "gemini generate_content_stream": ("gemini", "gcp.gemini", _gemini),
    "openai chat stream": ("openai", "openai", _openai_chat),
    "openai responses stream": ("openai", "openai", _openai_responses),
}


def _run(mode: str, config: ReasoningConfig, execution_id: str = "t-1", chunks: int = 4) -> tuple[Seen, Any]:
    vendor, _, call = MODES[mode]
    sim = Simulator(reasoning_text=THINKING, stream_chunks=chunks)
    with instrumented(_instrumentor(vendor), config=config) as telemetry, execution(execution_id), step("s"):
        seen = call(sim)
    assert flush_live()
    return seen, telemetry


def _config(store, journal_dir, sink, *guards: Any, live_text: bool | None = True) -> ReasoningConfig:
    return ReasoningConfig(
        store=store, journal=journal_dir, live=True, live_text=live_text, on_reasoning=sink, delta_guards=guards
    )


@pytest.mark.parametrize("mode", MODES)
def test_text_deltas_are_the_answer_the_application_read_on_their_own_channel(mode, store, journal_dir):
    sink = Sink()
    seen, _ = _run(mode, _config(store, journal_dir, sink))
    provider = MODES[mode][1]
    assert ANSWER_CANARY in seen.answer and seen.thinking == THINKING  # positive controls
    texts, reasonings = sink.text, sink.reasoning
    assert texts and reasonings
    assert "".join(d.text.text for d in texts) == seen.answer
    assert "".join(d.text.text for d in reasonings) == seen.thinking
    assert all(type(d) is TextDelta and isinstance(d.text, Untrusted) for d in texts)
    assert {(d.execution_id, d.step_id, d.provider, d.text.origin) for d in texts} == {
        ("t-1", "s", provider, "llm-output:s")
    }
    assert {d.text.origin for d in reasonings} == {"llm-reasoning:s"}
    assert [d.seq for d in texts] == list(range(1, len(texts) + 1))  # each channel counts its own
    assert [d.seq for d in reasonings] == list(range(1, len(reasonings) + 1))
    assert all(isinstance(d.block_index, int) for d in texts)
    assert REASONING_CANARY not in "".join(d.text.text for d in texts)
    assert all(REASONING_CANARY not in d.text.text for d in texts)
    assert ANSWER_CANARY not in "".join(d.text.text for d in reasonings)


@pytest.mark.parametrize("mode", MODES)
def test_a_rewriting_guard_masks_text_only_in_the_live_channel(mode, store, journal_dir):
    sink = Sink()
    kinds: set[type] = set()

    def mask_text(delta: ReasoningDelta | TextDelta) -> ReasoningDelta | TextDelta:
        kinds.add(type(delta))
        if not isinstance(delta, TextDelta):
            return delta
        masked = EMAIL.sub("[email]", delta.text.text)
        return dataclasses.replace(delta, text=Untrusted(masked, origin=delta.text.origin))

    seen, _ = _run(mode, _config(store, journal_dir, sink, mask_text))
    assert kinds == {ReasoningDelta, TextDelta}  # one guard list, both kinds
    assert "ana@example.org" in seen.answer  # the application's stream is unchanged
    live = "".join(d.text.text for d in sink.text)
    assert live == EMAIL.sub("[email]", seen.answer) and "[email]" in live and "@" not in live
    assert {d.text.origin for d in sink.text} == {"llm-output:s"}
    assert "".join(d.text.text for d in sink.reasoning) == THINKING


@pytest.mark.parametrize("mode", MODES)
def test_a_suppress_all_guard_leaves_the_call_unchanged(mode, store, journal_dir):
    plain, plain_telemetry = _run(mode, ReasoningConfig(store=store, journal=journal_dir), "t-plain")
    sink = Sink()
    calls: list[object] = []

    def suppress(delta: object) -> None:
        calls.append(delta)

    seen, telemetry = _run(mode, _config(store, journal_dir, sink, suppress))
    assert seen == plain
    assert any(isinstance(d, TextDelta) for d in calls) and sink.text == sink.reasoning == []
    ((span,), (plain_span,)) = telemetry.spans, plain_telemetry.spans
    assert [e.name for e in span.events] == [e.name for e in plain_span.events]


@pytest.mark.parametrize("mode", MODES)
def test_inspects_output_refuses_both_kinds(mode, store, journal_dir):
    sink = Sink()

    class Classifier:
        inspects_output = True

        def __call__(self, delta: object) -> object:
            raise AssertionError("never called: the call is refused live delivery")

    seen, telemetry = _run(mode, _config(store, journal_dir, sink, Classifier()))
    assert ANSWER_CANARY in seen.answer and seen.thinking == THINKING
    assert sink.events == []
    assert [e.name for e in telemetry.spans[0].events] == ["loom.reasoning.captured"]


@pytest.mark.parametrize("mode", MODES)
def test_live_text_is_off_by_default(mode, store, journal_dir):
    sink = Sink()
    seen, _ = _run(mode, _config(store, journal_dir, sink, live_text=None))
    assert "".join(d.text.text for d in sink.reasoning) == seen.thinking  # the live view runs ...
    assert sink.text == []  # ... without text
    assert all(not isinstance(e, TextDelta) for e in sink.events)


def test_the_environment_turns_live_text_on_and_a_bad_value_is_an_error(store, journal_dir):
    assert Runtime.resolve(environ={}).live_text is False
    assert Runtime.resolve(environ={"LOOM_OTEL_REASONING_LIVE_TEXT": "true"}).live_text is True
    assert Runtime.resolve(ReasoningConfig(live_text=False), {"LOOM_OTEL_REASONING_LIVE_TEXT": "1"}).live_text is False
    with pytest.raises(ReasoningConfigError, match="LOOM_OTEL_REASONING_LIVE_TEXT='sometimes'"):
        Runtime.resolve(environ={"LOOM_OTEL_REASONING_LIVE_TEXT": "sometimes"})

    sink = Sink()
    config = ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=sink)
    sim = Simulator(reasoning_text=THINKING)
    environ = {"LOOM_OTEL_REASONING_LIVE_TEXT": "true"}
    with instrumented(AnthropicInstrumentor(), config=config, environ=environ), execution("env-1"), step("s"):
        seen = _anthropic("messages.stream()")(sim)
    assert flush_live()
    assert "".join(d.text.text for d in sink.text) == seen.answer


def test_text_deltas_reach_only_the_sinks_and_the_sse_stream(hub, journal_dir, tmp_path, serve, caplog):
    caplog.set_level(logging.DEBUG)
    sink = Sink()
    # No store: the answer is never kept anyway, so the live view is the only place its text may go.
    config = ReasoningConfig(journal=journal_dir, live=True, live_text=True, on_reasoning=hub)
    server = serve(create_app(hub, authenticator=authenticator(), keepalive=0.5))
    headers = ALICE_NO_TENANT
    from loom_otel.live import register_sink

    unregister = register_sink(sink)
    try:
        with (
            pytest.warns(LoomOtelWarning, match="no reasoning store"),
            instrumented(AnthropicInstrumentor(), config=config) as telemetry,
        ):
            with execution("canary-t", principal="alice"), step("think"):
                sim = Simulator(reasoning_text=THINKING)
                first = _anthropic("create(stream=True)")(sim)
                assert flush_live()
                with SseReader(f"{server.url}/executions/canary-t/reasoning", headers) as reader:
                    assert reader.status == 200
                    seen = _anthropic("messages.stream()")(sim)
                    reader.until("done")  # the previous call's end, told on attach
                    events = reader.until("done")
    finally:
        unregister()
    assert flush_live()

    texts = [data for name, data in events if name == "text"]
    assert "".join(d["text"] for d in texts) == seen.answer == first.answer
    assert {d["origin"] for d in texts} == {"llm-output:think"}
    reasoning = "".join(data["text"] for name, data in events if name == "reasoning")
    assert reasoning == THINKING and ANSWER_CANARY not in reasoning
    assert ANSWER_CANARY in "".join(d.text.text for d in sink.text)  # positive control: the sink got it
    assert hub.partial("canary-t", "think") is None  # cleared: nothing of the answer stays in the hub
    # The answer echoes the question, which the SDK itself logs with the request it sends: leave its loggers out.
    sdk = ("anthropic", "httpx2", "httpcore2")
    logs = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(sdk))
    leaks = find_leaks(
        [ANSWER_CANARY], spans=telemetry.spans, directories=[journal_dir, tmp_path / "state"], texts=[logs]
    )
    assert leaks == []
    assert all(ANSWER_CANARY not in repr(d) for d in sink.text)  # Untrusted hides its text from repr


def test_catch_up_is_reasoning_only(hub):
    from loom_otel.live._channel import CallStarted, LiveCall

    call = LiveCall(1, "e-1", "s", "anthropic", principal="alice")
    hub.observe(CallStarted(call))
    hub.observe(TextDelta("e-1", "s", "anthropic", 1, Untrusted(ANSWER_CANARY, origin="llm-output:s"), call_id=1))
    hub.observe(ReasoningDelta("e-1", "s", "anthropic", 0, Untrusted("thinking", origin="llm-reasoning:s"), call_id=1))
    partial = hub.partial("e-1", "s")
    assert partial is not None and partial.blocks == ((0, "thinking"),)

    async def attach() -> list[Any]:
        from loom_otel.live import Viewer

        subscription = hub.subscribe("e-1", Viewer("alice"))
        assert subscription is not None
        hub.observe(TextDelta("e-1", "s", "anthropic", 1, Untrusted("live", origin="llm-output:s"), call_id=1))
        await asyncio.sleep(0)
        batch = await subscription.next_batch(1.0)
        subscription.close()
        return batch

    batch = asyncio.run(attach())
    assert [type(e).__name__ for e in batch] == ["Partial", "TextDelta"]
