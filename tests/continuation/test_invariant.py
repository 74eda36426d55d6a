"""The continuation invariant, tested differentially (DESIGN "Never worse than bare"): for generated
Anthropic conversations (1-3 turns, tool rounds, interleaved and redacted thinking) and generated edits
of the history the application sends (system, tools and model changes at turn boundaries and inside a
tool round, edited and removed messages, compaction, stripped thinking, stripped signatures, emptied
texts, google-adk's redacted form of an emptied block), with and without the vendor's server-side
drops, in keep and redact mode, with and without readable reasoning by request (a display left unset
or omitted, ``LOOM_OTEL_REQUEST_READABLE=summarized``): every request the application builds is sent twice to the strict
simulator, once as the bare SDK sends it (instrumentation suppressed) and once through loom-otel.
No case may be accepted bare and rejected instrumented. 2,050 generated cases per run; the tally
(cases, requests, repairs: rejected bare and accepted instrumented) is printed with ``-s``."""

from __future__ import annotations

import collections
import contextlib
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.instrumentation.utils import suppress_instrumentation

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES
from tests.support.tools import TRAINS, WEATHER

CANARY = "CANARY-invariant-2d9b"
EDITS = (
    "system",
    "tools",
    "model",
    "edit_user",
    "remove_turn",
    "compact",
    "strip_thinking",
    "strip_all_thinking",
    "strip_signature",
    "empty_text",
    "adk_form",
)
TALLY: collections.Counter[str] = collections.Counter()


@dataclass
class Case:
    transcript: str
    vendor_drops: bool
    rounds: int
    interleaved: bool
    redacted: bool
    turns: int
    display: str | None = None
    readable: bool = False
    edits: dict[int, list[str]] = field(default_factory=dict)
    """Request index -> edits applied to what the application sends from that request on."""


cases = st.builds(
    Case,
    transcript=st.sampled_from(["keep", "redact"]),
    vendor_drops=st.booleans(),
    rounds=st.integers(0, 2),
    interleaved=st.booleans(),
    redacted=st.booleans(),
    turns=st.integers(1, 3),
    display=st.sampled_from([None, "omitted", "summarized"]),
    readable=st.booleans(),
    edits=st.dictionaries(st.integers(1, 6), st.lists(st.sampled_from(EDITS), min_size=1, max_size=2), max_size=3),
)


@dataclass
class App:
    """What an application holds and sends: its settings and its history."""

    system: str = "You are a travel planner."
    tools: list[dict[str, Any]] = field(default_factory=lambda: [WEATHER, TRAINS])
    model: str = "claude-sonnet-5-5"
    history: list[Any] = field(default_factory=list)

    def request(self, case: Case) -> dict[str, Any]:
        thinking: dict[str, Any] = {"type": "adaptive"}
        if case.display is not None:
            thinking["display"] = case.display
        if case.vendor_drops:
            thinking["block_binding"] = {"prefix_mismatch_behavior": "drop_block"}
        return {
            "model": self.model,
            "max_tokens": 4096,
            "system": self.system,
            "tools": self.tools,
            "thinking": thinking,
            "messages": copy.deepcopy(self.history),
        }


def _blocks(message: Any) -> list[dict[str, Any]]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _assistant(app: App) -> list[dict[str, Any]]:
    return [m for m in app.history if m["role"] == "assistant"]


def _edit(app: App, edit: str) -> None:
    """One change an application or a framework makes to what it sends."""
    if edit == "system":
        app.system += " Answer in French."
    elif edit == "tools":
        app.tools = [*app.tools[:1], {**TRAINS, "description": "Trains, fares included."}]
    elif edit == "model":
        app.model = "claude-opus-5-1" if app.model == "claude-sonnet-5-5" else "claude-sonnet-5-5"
    elif edit == "edit_user" and app.history:
        first = app.history[0]
        if isinstance(first["content"], str):
            first["content"] += " (edited)"
    elif edit == "remove_turn":
        users = [i for i, m in enumerate(app.history) if m["role"] == "user" and isinstance(m["content"], str)]
        if len(users) >= 2:
            del app.history[users[0] : users[1]]
    elif edit == "compact" and len(app.history) > 2:
        tail = app.history[-1:] if app.history[-1]["role"] == "user" else []
        app.history = [{"role": "user", "content": "Summary of the conversation so far: a trip to Lyon."}, *tail]
        if not tail:
            app.history.append({"role": "assistant", "content": "Noted."})
            app.history.append({"role": "user", "content": "Go on."})
    elif edit in ("strip_thinking", "strip_all_thinking"):
        targets = _assistant(app)[-1:] if edit == "strip_thinking" else _assistant(app)
        for message in targets:
            kept = [b for b in _blocks(message) if b.get("type") not in ("thinking", "redacted_thinking")]
            message["content"] = kept or [{"type": "text", "text": "..."}]
    elif edit == "strip_signature":
        for message in _assistant(app)[-1:]:
            for block in _blocks(message):
                if block.get("type") == "thinking":
                    block["signature"] = ""
    elif edit == "empty_text":
        for message in _assistant(app):
            for block in _blocks(message):
                if block.get("type") == "thinking":
                    block["thinking"] = ""
    elif edit == "adk_form":
        for message in _assistant(app):
            message["content"] = [
                {"type": "redacted_thinking", "data": b["signature"]}
                if b.get("type") == "thinking" and not b.get("thinking") and b.get("signature")
                else b
                for b in _blocks(message)
            ]


def _send(send: Callable[[Simulator, dict[str, Any]], Any], sim: Simulator, kw: dict[str, Any]) -> Any:
    """The response, or ``None`` when the vendor refused the request."""
    try:
        return send(sim, kw)
    except anthropic.BadRequestError:
        return None


def _param(message: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}


def _run(case: Case, mode: str, journal: Path) -> None:
    send = MODES[mode]
    sim = Simulator(
        strict=True,
        reasoning_text=f"Let me think. {CANARY}",
        max_tool_rounds=case.rounds,
        interleaved=case.interleaved,
        redacted=case.redacted,
    )
    app = App(history=[{"role": "user", "content": "Plan a day in Lyon."}])
    # One journal per case, closed at its end: 2,050 open journals would keep 4,100 threads alive.
    chain = Journal(journal, durability="os", checkpoint_key=None, checkpoint_interval=0)
    settings_ = ReasoningConfig(
        store=MemoryReasoningStore(),
        journal=chain,
        transcript=case.transcript,
        request_readable="summarized" if case.readable else "off",
    )
    turns = 1
    with contextlib.closing(chain), instrumented(AnthropicInstrumentor(), config=settings_) as telemetry:
        for index in range(1, 9):
            for edit in case.edits.get(index, ()):
                _edit(app, edit)
            kw = app.request(case)
            with suppress_instrumentation():
                bare = _send(send, sim, copy.deepcopy(kw))
            instrumented_ = _send(send, sim, kw)
            TALLY["requests"] += 1
            assert not (bare is not None and instrumented_ is None), f"accepted bare, rejected instrumented: {case}"
            if bare is None and instrumented_ is not None:
                TALLY["repaired"] += 1
            if instrumented_ is None:
                TALLY["refused_both"] += 1
                break
            app.history.append(_param(instrumented_))
            calls = [b for b in instrumented_.content if b.type == "tool_use"]
            if calls:
                results = [{"type": "tool_result", "tool_use_id": c.id, "content": "rain"} for c in calls]
                app.history.append({"role": "user", "content": results})
            elif turns < case.turns:
                turns += 1
                app.history.append({"role": "user", "content": f"And on day {turns}?"})
            else:
                break
    TALLY["cases"] += 1
    assert find_leaks([CANARY], spans=telemetry.spans) == []


# The generated edits include histories sent back without their reasoning turn after turn: the discard
# check's warning is expected there (tests/continuation/*/test_discard_check.py test it); this module
# tests acceptance only.
pytestmark = pytest.mark.filterwarnings(r"ignore:.*sent back none of the reasoning:loom_otel.core.LoomOtelWarning")


@pytest.fixture(scope="module", autouse=True)
def _report() -> Any:
    """The tally of the module's cases, printed at its end (``-s``)."""
    yield
    print(f"\ncontinuation invariant: {dict(TALLY)}")


@pytest.mark.slow
@settings(max_examples=1800, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(case=cases)
def test_never_worse_than_bare_create(case: Case, tmp_path_factory: pytest.TempPathFactory) -> None:
    _run(case, "sync", tmp_path_factory.mktemp("j") / "journal")


@pytest.mark.slow
@settings(max_examples=250, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(case=cases, mode=st.sampled_from(sorted(MODES)))
def test_never_worse_than_bare_every_call_mode(case: Case, mode: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    _run(case, mode, tmp_path_factory.mktemp("j") / "journal")
