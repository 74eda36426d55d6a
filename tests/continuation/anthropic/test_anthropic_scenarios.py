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
from tests.continuation.anthropic.loop import (
    CANARY,
    DROPPED,
    MODES,
    RESTORED,
    assistant,
    base,
    run_loop,
)
from tests.continuation.anthropic.loop import next_turn as _next
from tests.support.stores import FlakyStore
from tests.support.tools import TRAINS, WEATHER


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
