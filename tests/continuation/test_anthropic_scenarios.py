"""The continuation scenario table for Anthropic: every row in every call mode against the strict
simulator. Each row checks that the vendor accepts what loom-otel sends, that the span events say
exactly what was dropped or restored, and that the same request sent WITHOUT loom-otel is refused
with the vendor's 400 (so the row proves the repair, not the simulator's leniency)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import pytest

from loom_otel.core import ReasoningConfig, execution
from loom_otel.core.exceptions import ReasoningContinuationError
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import Telemetry, find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES as ALL_MODES
from tests.conftest import FlakyStore

MODES = {
    name: ALL_MODES[name]
    for name in ("sync", "async", "stream", "async_stream", "messages.stream", "async_messages.stream")
}

CANARY = "CANARY-continuation-5d1e"
MODEL = "claude-sonnet-5-5"
SYSTEM = "You are a careful travel assistant."
WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
TRAINS = {
    "name": "find_trains",
    "description": "Trains between two cities.",
    "input_schema": {"type": "object", "properties": {"origin": {"type": "string"}}},
}
QUESTION = "Should I pack an umbrella for Lyon tomorrow?"
NEXT = "And what about Paris?"
DROPPED = "loom.reasoning.dropped"
RESTORED = "loom.reasoning.restored"


def base(**overrides: Any) -> dict[str, Any]:
    kw: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 4096,
        "thinking": {"type": "adaptive", "display": "summarized"},
        "system": SYSTEM,
        "tools": [WEATHER],
    }
    kw.update(overrides)
    return kw


def assistant(message: Any, mode: str) -> dict[str, Any]:
    """How an application keeps a response: ``to_param()`` (pydantic blocks) or plain dicts."""
    if mode in ("sync", "async", "messages.stream"):
        return dict(message.to_param())
    return {"role": "assistant", "content": [b.model_dump() for b in message.content]}


def tool_result(message: Any) -> dict[str, Any]:
    call = next(b for b in message.content if b.type == "tool_use")
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "Rain, 14C."}]}


def run_loop(send: Callable[[dict[str, Any]], Any], mode: str) -> tuple[list[dict[str, Any]], list[Any]]:
    """One agent turn with a tool round: user, assistant(tool_use), user(tool_result), assistant(answer)."""
    history: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    responses = []
    while True:
        message = send(base(messages=list(history)))
        responses.append(message)
        history.append(assistant(message, mode))
        if message.stop_reason != "tool_use":
            return history, responses
        history.append(tool_result(message))


@dataclass(frozen=True)
class Row:
    name: str
    build: Callable[[list[dict[str, Any]], list[Any], str], dict[str, Any]]
    dropped: list[tuple[str, list[str]]]
    restored: list[str]
    redact: bool = False
    execution_after: str = "run-1"
    erase: bool = False
    store_raises: bool = False
    bare_fails: bool = True


def _p(*pairs: tuple[int, int]) -> list[str]:
    return [f"messages.{i}.content.{j}" for i, j in pairs]


def _next(history: list[dict[str, Any]], **overrides: Any) -> dict[str, Any]:
    return base(messages=[*history, {"role": "user", "content": NEXT}], **overrides)


def _edit(history: list[dict[str, Any]], _r: list[Any], _m: str) -> dict[str, Any]:
    return _next([{"role": "user", "content": "Should I pack an umbrella for Lyon on Friday?"}, *history[1:]])


def _compact(history: list[dict[str, Any]], _r: list[Any], _m: str) -> dict[str, Any]:
    summary = {"role": "user", "content": "Summary so far: the user asked about Lyon; it will rain."}
    return _next([summary, history[-1]])


def _strip(history: list[dict[str, Any]], responses: list[Any], mode: str) -> dict[str, Any]:
    stripped = assistant(responses[0], mode)
    stripped["content"] = [b for b in stripped["content"] if _type(b) != "thinking"]
    return base(messages=[history[0], stripped, history[2]])


def _type(block: Any) -> str:
    return block["type"] if isinstance(block, dict) else block.type


ALL = _p((1, 0), (3, 0))
ROWS = [
    Row("unchanged", lambda h, r, m: _next(h), [], [], bare_fails=False),
    Row("edit_early_user_message", _edit, [("prefix_changed", ALL)], []),
    Row("compact_to_summary", _compact, [("prefix_changed", _p((1, 0)))], []),
    Row("switch_model", lambda h, r, m: _next(h, model="claude-opus-5-5"), [("model_changed", ALL)], []),
    Row("add_tool", lambda h, r, m: _next(h, tools=[WEATHER, TRAINS]), [("tools_changed", ALL)], []),
    Row("change_system", lambda h, r, m: _next(h, system="Answer in French."), [("system_changed", ALL)], []),
    Row("strip_inflight_thinking", _strip, [], _p((1, 0))),
    Row(
        "redact_erased_blob",
        lambda h, r, m: _next(h),
        [("unresolvable", _p((1, 0))), ("follows_dropped", _p((3, 0)))],
        [],
        redact=True,
        erase=True,
    ),
    Row(
        "redact_ref_from_other_execution",
        lambda h, r, m: _next(h),
        [("unresolvable", _p((1, 0))), ("follows_dropped", _p((3, 0)))],
        [],
        redact=True,
        execution_after="run-2",
    ),
    Row("redact_store_raises", lambda h, r, m: _next(h), [], [], redact=True, store_raises=True),
]


def _events(telemetry: Telemetry, name: str) -> list[dict[str, Any]]:
    last = [s for s in telemetry.spans if s.name.startswith("chat ")][-1]
    return reasoning_events([last], name)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_scenario(row: Row, mode: str, flaky_store: FlakyStore, tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Rain is likely, check first. {CANARY}")
    config = ReasoningConfig(
        store=flaky_store, journal=tmp_path / "journal", transcript="redact" if row.redact else "keep"
    )
    send = MODES[mode]
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with execution("run-1"):
            history, responses = run_loop(lambda kw: send(sim, kw), mode)
        request = row.build(history, responses, mode)
        if row.erase:
            flaky_store.erase_execution(None, "run-1")
        flaky_store.broken = row.store_raises
        sent_before = len(sim.requests)
        with execution(row.execution_after):
            if row.store_raises:
                with pytest.raises(ReasoningContinuationError) as raised:
                    send(sim, request)
                assert len(sim.requests) == sent_before  # nothing reached the vendor
                assert CANARY not in str(raised.value)
                answer = None
            else:
                answer = send(sim, request)
    flaky_store.broken = False

    if answer is not None:
        assert answer.stop_reason in ("tool_use", "end_turn")  # the vendor accepted it
        dropped = _events(telemetry, DROPPED)
        assert [(e["loom.reasoning.drop.reason"], list(e["loom.reasoning.drop.positions"])) for e in dropped] == [
            (reason, positions) for reason, positions in row.dropped
        ]
        assert [e["loom.reasoning.drop.count"] for e in dropped] == [len(p) for _, p in row.dropped]
        restored = _events(telemetry, RESTORED)
        if row.restored:
            (event,) = restored
            assert list(event["loom.reasoning.restore.positions"]) == row.restored
            assert event["loom.reasoning.restore.count"] == len(row.restored)
            assert event["loom.reasoning.restore.kind"] == "thinking"
        else:
            assert restored == []
    signatures = [b.signature for r in responses for b in r.content if b.type == "thinking"]
    assert find_leaks([CANARY, *signatures], spans=telemetry.spans, directories=[tmp_path / "journal"]) == []
    assert find_leaks([CANARY, *signatures], directories=[tmp_path / "journal.bindings"]) == []

    # The same request without loom-otel: the vendor refuses it.
    bare = sim.anthropic_client()
    if row.bare_fails:
        with pytest.raises(anthropic.BadRequestError) as refused:
            bare.messages.create(**request)
        assert refused.value.status_code == 400
    else:
        assert bare.messages.create(**request).stop_reason in ("tool_use", "end_turn")
