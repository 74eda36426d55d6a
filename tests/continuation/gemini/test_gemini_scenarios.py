"""The continuation scenario table for Gemini: every row in every call mode against the strict
simulator. Each row checks that the vendor accepts what loom-otel sends and that the span events say
exactly what was dropped or restored. Gemini validates only the current turn's function-call
signatures, so the request WITHOUT loom-otel is asserted to fail with the vendor's 400 exactly where
the real vendor would (a current-turn signature lost, parallel calls with the first signature
stripped), and to be accepted elsewhere."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.genai import errors

from loom_otel.core import ReasoningConfig, execution
from loom_otel.core.exceptions import ReasoningContinuationError
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.continuation.gemini.modes import MODEL, MODES, user
from tests.continuation.gemini.scenario import (
    CANARY,
    NEXT,
    TRAINS,
    WEATHER,
    answers,
    as_dict,
    call_position,
    config,
    last_call_events,
    reasoning_positions,
    run_loop,
    signatures,
)
from tests.support.stores import FlakyStore

DROPPED = "loom.reasoning.dropped"
RESTORED = "loom.reasoning.restored"
Request = tuple[list[Any], Any]
Expect = Callable[[list[Any]], list[tuple[str, list[str]]]]


def _all(reason: str) -> Expect:
    return lambda contents: [(reason, reasoning_positions(contents))]


def _unresolvable(contents: list[Any]) -> list[tuple[str, list[str]]]:
    first, *rest = reasoning_positions(contents)
    return [("unresolvable", [first]), ("follows_dropped", rest)]


def _none(contents: list[Any]) -> list[tuple[str, list[str]]]:
    return []


def _edit(mid: list[Any], final: list[Any]) -> Request:
    return [user("Should I pack an umbrella for Lyon on Friday?"), *final[1:]], NEXT


def _compact(mid: list[Any], final: list[Any]) -> Request:
    start = max(i for i, c in enumerate(final) if c.role == "user")  # the last model step follows it
    return [user("Summary so far: the user asked about Lyon; it will rain."), *final[start + 1 :]], NEXT


def _strip_signature(mid: list[Any], final: list[Any]) -> Request:
    """The framework kept the thoughts but lost the current turn's signatures (dicts rebuilt)."""
    return [mid[0], *(as_dict(c, signatures=False) for c in mid[1:])], answers(mid)


def _rebuilt(mid: list[Any], final: list[Any]) -> Request:
    """The framework rebuilt the history from its own records: no thoughts, no signatures."""
    rebuilt = [as_dict(c, signatures=False, thoughts=False) for c in mid]
    return [c for c in rebuilt if c["parts"]], answers(mid)


@dataclass(frozen=True)
class Row:
    name: str
    build: Callable[[list[Any], list[Any]], Request]
    dropped: Expect = _none
    restored: int = 0
    """How many current-turn calls get their signature back (the first ``restored`` calls)."""
    redact: bool = False
    execution_after: str = "run-1"
    erase: bool = False
    store_raises: bool = False
    bare_fails: bool = False
    cfg: dict[str, Any] = field(default_factory=dict)
    loop_cfg: dict[str, Any] = field(default_factory=dict)


def _next(mid: list[Any], final: list[Any]) -> Request:
    return final, NEXT


ROWS = [
    Row("unchanged", _next),
    Row("edit_early_user_message", _edit, _all("prefix_changed")),
    Row("compact_to_summary", _compact, _all("prefix_changed")),
    Row("switch_model_is_not_a_change", _next, cfg={"model": "gemini-3-pro-preview"}),
    Row("add_tool", _next, _all("tools_changed"), cfg={"tools": (WEATHER, TRAINS)}),
    Row("change_system", _next, _all("system_changed"), cfg={"system": "Answer in French."}),
    Row("framework_drops_signature", _strip_signature, restored=1, bare_fails=True),
    Row("chat_rebuilt_from_dicts", _rebuilt, restored=1, bare_fails=True),
    Row(
        "parallel_calls_first_signature_stripped",
        _strip_signature,
        restored=1,
        bare_fails=True,
        loop_cfg={"tools": (WEATHER, TRAINS)},
        cfg={"tools": (WEATHER, TRAINS)},
    ),
    Row(
        "parallel_calls_unchanged",
        lambda m, f: (m, answers(m)),
        loop_cfg={"tools": (WEATHER, TRAINS)},
        cfg={"tools": (WEATHER, TRAINS)},
    ),
    Row("redact_unchanged", _next, redact=True),
    Row("redact_erased_blob", _next, _unresolvable, redact=True, erase=True),
    Row("redact_ref_from_other_execution", _next, _unresolvable, redact=True, execution_after="run-2"),
    Row("redact_store_raises", _next, redact=True, store_raises=True),
]


def _send(mode: str, sim: Simulator, request: Request, cfg: Any) -> list[Any]:
    history, message = request
    _, items = MODES[mode](sim, history, message, cfg)
    return items


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_scenario(row: Row, mode: str, flaky_store: FlakyStore, tmp_path: Path, monkeypatch: Any) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Rain is likely, check first. {CANARY}", stream_chunks=3)
    journal = tmp_path / "journal"
    settings = ReasoningConfig(store=flaky_store, journal=journal, transcript="redact" if row.redact else "keep")
    model = row.cfg.get("model", MODEL)
    monkeypatch.setattr("tests.continuation.gemini.modes.MODEL", model)
    cfg = config(**{k: v for k, v in row.cfg.items() if k != "model"})
    with instrumented(GoogleGenAiInstrumentor(), config=settings) as telemetry:
        with execution("run-1"):
            monkeypatch.setattr("tests.continuation.gemini.modes.MODEL", MODEL)
            mid, final, seen = run_loop(mode, sim, config(**row.loop_cfg))
            monkeypatch.setattr("tests.continuation.gemini.modes.MODEL", model)
        history, message = row.build(mid, final)
        contents = [*history, user(message)]
        if row.erase:
            flaky_store.erase_execution(None, "run-1")
        flaky_store.broken = row.store_raises
        sent_before = len(sim.requests)
        with execution(row.execution_after):
            if row.store_raises:
                with pytest.raises(ReasoningContinuationError) as raised:
                    _send(mode, sim, (history, message), cfg)
                assert len(sim.requests) == sent_before  # nothing reached the vendor
                failure = str(raised.value)
            else:
                answer = _send(mode, sim, (history, message), cfg)
                assert answer and answer[-1].candidates  # the vendor accepted it
                failure = ""
    flaky_store.broken = False

    if not row.store_raises:
        dropped = last_call_events(telemetry, DROPPED)
        expected = [(reason, positions) for reason, positions in row.dropped(contents) if positions]
        assert [
            (e["loom.reasoning.drop.reason"], list(e["loom.reasoning.drop.positions"])) for e in dropped
        ] == expected
        assert [e["loom.reasoning.drop.count"] for e in dropped] == [len(p) for _, p in expected]
        restored = last_call_events(telemetry, RESTORED)
        if row.restored:
            (event,) = restored
            positions = [call_position(contents, rank) for rank in range(row.restored)]
            assert list(event["loom.reasoning.restore.positions"]) == positions
            assert event["loom.reasoning.restore.count"] == row.restored
            assert event["loom.reasoning.restore.kind"] == "signature"
        else:
            assert restored == []
    secrets = [CANARY, *signatures(seen)]
    assert find_leaks(secrets, spans=telemetry.spans, directories=[journal, tmp_path / "journal.bindings"]) == []
    assert find_leaks(secrets, texts=[failure]) == []

    # The same request without loom-otel.
    bare = sim.genai_client()
    if row.bare_fails:
        with pytest.raises(errors.ClientError) as refused:
            bare.models.generate_content(model=model, contents=contents, config=cfg)
        assert refused.value.code == 400
        assert "thought_signature" in str(refused.value)
    elif not row.redact:  # redact-mode history holds blanked thoughts: only loom-otel can send it back
        assert bare.models.generate_content(model=model, contents=contents, config=cfg).candidates
