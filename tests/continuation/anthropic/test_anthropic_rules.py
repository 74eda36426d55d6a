"""Rules of the continuation pass that the scenario table does not cover: blocks loom-otel never saw,
server-side threads, the vendor's own drops, and the application's history never written to."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import anthropic
import pytest

from loom_otel.core import MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.core._runtime._config import Runtime
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.anthropic._continuation import AnthropicContinuation
from loom_otel.testing import instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.continuation.anthropic.loop import NEXT, QUESTION, base, run_loop

BETA = {"anthropic-beta": "thinking-binding-controls-2026-08-01"}


def _bare_history(sim: Simulator) -> list[dict[str, Any]]:
    client = sim.anthropic_client()
    history, _ = run_loop(lambda kw: client.messages.create(**kw), "sync")
    return history


def _config(tmp_path: Path, **kw: Any) -> ReasoningConfig:
    return ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal", **kw)


def test_blocks_never_seen_are_left_alone(tmp_path: Path) -> None:
    sim = Simulator(strict=True)
    history = _bare_history(sim)  # produced without loom-otel: no recorded bindings
    edited = [{"role": "user", "content": "Umbrella for Lyon on Friday?"}, *history[1:]]
    with instrumented(AnthropicInstrumentor(), config=_config(tmp_path)) as telemetry:
        client = sim.anthropic_client()
        assert client.messages.create(**base(messages=[*history, {"role": "user", "content": NEXT}])).content
        with pytest.raises(anthropic.BadRequestError):
            client.messages.create(**base(messages=[*edited, {"role": "user", "content": NEXT}]))
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []


def test_vendor_drops_become_vendor_dropped_events(tmp_path: Path) -> None:
    sim = Simulator(strict=True)
    history = _bare_history(sim)
    edited = [{"role": "user", "content": "Umbrella for Lyon on Friday?"}, *history[1:]]
    thinking = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    kw = base(messages=[*edited, {"role": "user", "content": NEXT}], thinking=thinking)
    with instrumented(AnthropicInstrumentor(), config=_config(tmp_path)) as telemetry:
        message = sim.anthropic_client().beta.messages.create(**kw, extra_headers=BETA)
    assert len(message.input_transformations) == 2
    (event,) = reasoning_events(telemetry.spans, "loom.reasoning.vendor_dropped")
    assert event == {
        "loom.reasoning.drop.reason": "prefix_binding_mismatch",
        "loom.reasoning.drop.count": 2,
        "loom.reasoning.drop.positions": ("messages.1.content.0", "messages.3.content.0"),
    }


def test_server_side_thread_continuation_is_left_alone(tmp_path: Path) -> None:
    adapter = AnthropicContinuation(Runtime.resolve(_config(tmp_path)))
    kwargs = {"thread": {"type": "continue", "previous_message_id": "msg_1"}, "messages": [], "model": "m"}
    assert adapter.prepare("anthropic", kwargs) is None


def test_application_history_is_never_written_to(tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text="CANARY-history-77aa")
    with instrumented(AnthropicInstrumentor(), config=_config(tmp_path, transcript="redact")), execution("r"):
        client = sim.anthropic_client()
        history, _ = run_loop(lambda kw: client.messages.create(**kw), "sync")
        request = [*history, {"role": "user", "content": NEXT}]
        before = copy.deepcopy(request)
        client.messages.create(**base(messages=request))
    assert request == before  # rehydration went into a copy; the app's dicts and blocks are untouched
    assert "CANARY-history-77aa" not in repr(request)
    assert "CANARY-history-77aa" in str(sim.requests[-1].body)  # while the vendor got the text back
    assert request[0]["content"] == QUESTION
