"""``LOOM_OTEL_REQUEST_READABLE=summarized`` on the Anthropic SDK: where the application asks for
thinking without readable output, loom-otel asks for the summary, keeps it, and hands the application
what the bare call returns; the strict simulator accepts every later request (the text goes back where
the vendor's signature needs it). Differential: the same script, bare and instrumented, every mode."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from loom_otel.core import LoomOtelWarning, MemoryReasoningStore, ReasoningConfig, ReasoningConfigError
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.anthropic._readable import default_omitted, readable_thinking, summarises
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES
from tests.support.anthropic_sdk import requires_anthropic
from tests.support.tools import WEATHER

CANARY = "CANARY-readable-a61c"
OMITTED = {"type": "adaptive", "display": "omitted"}
_MASKED = frozenset({"signature", "id", "tool_use_id"})


def _sim() -> Simulator:
    return Simulator(strict=True, reasoning_text=f"Check the forecast before answering. {CANARY}")


def _kwargs(messages: list[dict[str, Any]], thinking: dict[str, Any] = OMITTED, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "thinking": thinking,
        "tools": [WEATHER],
        "messages": messages,
        **extra,
    }


def _script(sim: Simulator, mode: str, thinking: dict[str, Any] = OMITTED) -> list[Any]:
    """Two turns, each a tool round and its answer: every message the application received."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "Should I pack an umbrella for Lyon?"}]
    received = []
    for turn in range(2):
        while True:
            message = MODES[mode](sim, _kwargs(list(history), thinking))
            received.append(message)
            history.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
            if message.stop_reason != "tool_use":
                break
            call = next(b for b in message.content if b.type == "tool_use")
            history.append(
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "Rain."}]}
            )
        if turn == 0:
            history.append({"role": "user", "content": "And Paris?"})
    return received


def _view(messages: list[Any]) -> list[Any]:
    """What the application received, with the values a signer or a request hash makes (signatures,
    ids) replaced by their order of appearance, and the simulator's estimate of the input tokens (it
    counts the text put back) left out."""
    seen: dict[str, int] = {}

    def mask(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: mask(v, k) for k, v in value.items() if k != "input_tokens"}
        if isinstance(value, list):
            return [mask(v) for v in value]
        if key in _MASKED and isinstance(value, str) and value:
            return f"<{key} {seen.setdefault(value, len(seen))}>"
        return value

    return [mask(m.model_dump(mode="json", exclude_none=True)) for m in messages]


@pytest.mark.parametrize("mode", list(MODES))
def test_the_app_sees_the_bare_run_and_the_summary_is_kept(mode, store, journal_dir, caplog):
    caplog.set_level(logging.DEBUG, logger="loom_otel")  # the SDK's own DEBUG log quotes requests (it warns)
    bare_sim = _sim()
    bare = _script(bare_sim, mode)  # not instrumented
    sim = _sim()
    config = ReasoningConfig(store=store, journal=journal_dir, request_readable="summarized")
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        received = _script(sim, mode)

    assert _view(received) == _view(bare)
    assert len(received) == 4 and [b.type for b in received[0].content][:1] == ["thinking"]
    assert all(b.thinking == "" for m in received for b in m.content if b.type == "thinking")
    # what the vendor was asked, and what it needed back: the summary on every later request
    sent = [r.body for r in sim.requests]
    assert [b["thinking"] for b in sent] == [{**OMITTED, "display": "summarized"}] * 4
    assert CANARY in str(sent[1]["messages"][1]) and CANARY in str(sent[2]["messages"][1])
    assert CANARY not in str([r.body for r in bare_sim.requests])
    # kept as evidence, by reference only
    events = reasoning_events(telemetry.spans)
    assert len(events) == 4
    for event in events:
        assert event["loom.reasoning.part.kind"] == ("summary",)
        (ref,) = event["loom.reasoning.part.ref"]
        assert CANARY in (store.get(ref, tenant=None, execution_id=event["loom.execution.id"]) or b"").decode()
        assert event["loom.request.thinking.display"] == "omitted"
        assert event["loom.request.readable"] == "summarized"
    signatures = [b.signature for m in received for b in m.content if b.type == "thinking"]
    leaks = find_leaks([CANARY, *signatures], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text])
    assert leaks == []
    assert find_leaks([CANARY], texts=[repr(received), *(m.model_dump_json() for m in received)]) == []


def _events(sim: Simulator, mode: str, kwargs: dict[str, Any]) -> list[Any]:
    async def go() -> list[Any]:
        if mode == "async_stream":
            return [e async for e in await sim.async_anthropic_client().messages.create(stream=True, **kwargs)]
        async with sim.async_anthropic_client().messages.stream(**kwargs) as stream:
            return [e async for e in stream]

    if mode.startswith("async"):
        return asyncio.run(go())
    if mode == "stream":
        with sim.anthropic_client().messages.create(stream=True, **kwargs) as stream:
            return list(stream)
    with sim.anthropic_client().messages.stream(**kwargs) as helper:
        return list(helper)


@pytest.mark.parametrize("mode", ["stream", "async_stream", "messages.stream", "async_messages.stream"])
def test_a_stream_hands_on_the_events_of_the_bare_stream(mode, store, journal_dir):
    kwargs = _kwargs([{"role": "user", "content": "Hi"}])
    bare = _events(_sim(), mode, kwargs)
    config = ReasoningConfig(store=store, journal=journal_dir, request_readable="summarized")
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        events = _events(_sim(), mode, kwargs)
    assert [(e.type, getattr(getattr(e, "delta", None), "type", None)) for e in events] == [
        (e.type, getattr(getattr(e, "delta", None), "type", None)) for e in bare
    ]
    assert find_leaks([CANARY], texts=[repr(events)]) == []
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.size"][0] > 0 and len(store) == 1


@pytest.mark.parametrize("mode", ["sync", "stream", "messages.stream", "async_messages.stream"])
def test_a_display_left_unset_on_a_model_that_omits_asks_for_the_summary(mode, store, journal_dir):
    sim = _sim()
    config = ReasoningConfig(store=store, journal=journal_dir, request_readable="summarized")
    kwargs = _kwargs([{"role": "user", "content": "Hello"}], {"type": "adaptive"}, model="claude-sonnet-5-5")
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        message = MODES[mode](sim, kwargs)
    assert sim.requests[0].body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert [b.thinking for b in message.content if b.type == "thinking"] == [""]
    assert kwargs["thinking"] == {"type": "adaptive"}  # the application's own request is never written to
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.size"][0] > 0 and len(store) == 1
    assert "loom.request.thinking.display" not in event


@pytest.mark.parametrize("thinking", [{"type": "adaptive", "display": "summarized"}, {"type": "adaptive"}])
def test_a_request_that_asks_for_readable_thinking_is_sent_as_it_is(thinking, store, journal_dir):
    sim = _sim()
    config = ReasoningConfig(store=store, journal=journal_dir, request_readable="summarized")
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        message = MODES["sync"](sim, _kwargs([{"role": "user", "content": "Hi"}], thinking))  # 4-6: summarized
    assert sim.requests[0].body["thinking"] == thinking
    assert CANARY in next(b.thinking for b in message.content if b.type == "thinking")
    (event,) = reasoning_events(telemetry.spans)
    assert "loom.request.readable" not in event


def test_an_sdk_error_carries_no_text_put_back(store, journal_dir):
    import anthropic

    sim = _sim()
    config = ReasoningConfig(store=store, journal=journal_dir, request_readable="summarized")
    history: list[dict[str, Any]] = [{"role": "user", "content": "Umbrella?"}]
    with instrumented(AnthropicInstrumentor(), config=config):
        first = MODES["sync"](sim, _kwargs(history))
        call = next(b for b in first.content if b.type == "tool_use")
        history += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "Rain."}]},
        ]
        sim.fail_next(400)
        with pytest.raises(anthropic.APIStatusError) as caught:
            MODES["sync"](sim, _kwargs(history))
    assert CANARY in str(sim.requests[-1].body)  # it was sent
    exc = caught.value
    assert CANARY not in f"{exc} {exc.body} {exc.response.request.content!r}"


def test_omitted_reasoning_warns_once_naming_the_setting(store, journal_dir):
    sim = _sim()
    with pytest.warns(LoomOtelWarning, match="LOOM_OTEL_REQUEST_READABLE=summarized") as caught:
        with instrumented(AnthropicInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)):
            for _ in range(3):
                MODES["sync"](sim, _kwargs([{"role": "user", "content": "Hi"}]))
    assert len([w for w in caught if "REQUEST_READABLE" in str(w.message)]) == 1


def test_readable_reasoning_and_the_setting_on_do_not_warn(store, journal_dir, recwarn):
    sim = _sim()
    on = ReasoningConfig(store=store, journal=journal_dir, request_readable="summarized")
    with instrumented(AnthropicInstrumentor(), config=on):
        MODES["sync"](sim, _kwargs([{"role": "user", "content": "Hi"}]))
    with instrumented(AnthropicInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)):
        MODES["sync"](sim, _kwargs([{"role": "user", "content": "Hi"}], {"type": "adaptive"}))
    assert [w for w in recwarn if "REQUEST_READABLE" in str(w.message)] == []


@requires_anthropic("0.77", "messages.create(output_config=)")
def test_the_request_thinking_settings_go_on_the_span_event_and_record(store, journal_dir):
    sim = _sim()
    kwargs = _kwargs(
        [{"role": "user", "content": "Hi"}],
        {"type": "enabled", "budget_tokens": 2048, "display": "summarized"},
        output_config={"effort": "high"},
    )
    with instrumented(AnthropicInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)) as telemetry:
        MODES["sync"](sim, kwargs)
    expected = {
        "loom.request.thinking.type": "enabled",
        "loom.request.thinking.budget": 2048,
        "loom.request.thinking.display": "summarized",
        "loom.request.thinking.effort": "high",
    }
    (span,) = [s for s in telemetry.spans if s.name.startswith("chat")]
    (event,) = reasoning_events([span])
    (record,) = [r for r in iter_records(journal_dir) if r.get("type") == "capture"]
    for where in (dict(span.attributes or {}), event, record.get("attributes", record)):
        assert {k: where.get(k) for k in expected} == expected
    assert "loom.request.readable" not in event


@pytest.mark.parametrize(
    ("model", "kind"),
    [("claude-sonnet-4-6", "summary"), ("claude-3-7-sonnet-20250219", "text"), ("claude-opus-5-5", "summary")],
)
def test_a_part_is_a_summary_when_the_responding_model_summarises(model, kind, store, journal_dir):
    sim = _sim()
    kwargs = _kwargs([{"role": "user", "content": "Hi"}], {"type": "enabled", "budget_tokens": 2048}, model=model)
    with instrumented(AnthropicInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)) as telemetry:
        for mode in ("sync", "stream"):
            MODES[mode](sim, kwargs)
    assert [e["loom.reasoning.part.kind"] for e in reasoning_events(telemetry.spans)] == [(kind,), (kind,)]


def test_which_models_summarise_and_which_omit_by_default():
    assert [summarises(m) for m in ("claude-3-7-sonnet-20250219", "claude-sonnet-4-5@20250929", "claude-test")] == [
        False,
        True,
        False,
    ]
    assert summarises("us.anthropic.claude-opus-4-1-20250805-v1:0") and summarises("claude-mythos-preview")
    assert [default_omitted(m) for m in ("claude-sonnet-4-6", "claude-haiku-5-5", "claude-fable-5-2")] == [
        False,
        True,
        True,
    ]
    assert readable_thinking({"model": "claude-sonnet-4-6", "thinking": {"type": "adaptive"}}) is None
    assert (
        readable_thinking({"model": "claude-sonnet-4-6", "thinking": {"type": "disabled", "display": "omitted"}})
        is None
    )
    assert readable_thinking(
        {"model": "x", "thinking": {"type": "enabled", "budget_tokens": 1024, "display": "omitted"}}
    ) == {
        "type": "enabled",
        "budget_tokens": 1024,
        "display": "summarized",
    }


def test_the_setting_is_validated_naming_it(store, journal_dir, monkeypatch):
    monkeypatch.setenv("LOOM_OTEL_REQUEST_READABLE", "summarised")
    with pytest.raises(ReasoningConfigError, match=r"LOOM_OTEL_REQUEST_READABLE='summarised'.*off, summarized"):
        AnthropicInstrumentor().instrument(config=ReasoningConfig(store=store, journal=journal_dir))
    with pytest.raises(ReasoningConfigError, match="request_readable"):
        AnthropicInstrumentor().instrument(config=ReasoningConfig(store=store, request_readable="all"))
    monkeypatch.setenv("LOOM_OTEL_REQUEST_READABLE", "summarized")
    with pytest.raises(ReasoningConfigError, match=r"LOOM_OTEL_REQUEST_READABLE.*LOOM_OTEL_REASONING_STORE"):
        AnthropicInstrumentor().instrument(config=ReasoningConfig(journal=journal_dir))
    monkeypatch.setenv("LOOM_OTEL_REQUEST_READABLE", "OFF")
    with pytest.warns(LoomOtelWarning, match="no reasoning store"):  # the boot warning only
        with instrumented(AnthropicInstrumentor(), config=ReasoningConfig(journal=journal_dir)):
            pass


def test_the_environment_turns_it_on(store: MemoryReasoningStore, journal_dir: Path):
    sim = _sim()
    environ = {"LOOM_OTEL_REQUEST_READABLE": "summarized"}
    with instrumented(
        AnthropicInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir), environ=environ
    ):
        message = MODES["sync"](sim, _kwargs([{"role": "user", "content": "Hi"}]))
    assert sim.requests[0].body["thinking"]["display"] == "summarized"
    assert [b.thinking for b in message.content if b.type == "thinking"] == [""] and len(store) == 1


def test_a_raw_response_body_carries_no_summary(store, journal_dir):
    sim = _sim()
    config = ReasoningConfig(store=store, journal=journal_dir, request_readable="summarized")
    with instrumented(AnthropicInstrumentor(), config=config):
        raw = sim.anthropic_client().messages.with_raw_response.create(**_kwargs([{"role": "user", "content": "Hi"}]))
        message = raw.parse()
    assert [b.thinking for b in message.content if b.type == "thinking"] == [""]
    assert find_leaks([CANARY], texts=[raw.http_response.text, raw.http_response.content.decode()]) == []
    assert len(store) == 1
