"""``LOOM_OTEL_DIGEST=hmac-sha256`` with continuation in keep mode: texts the application sends back
unchanged are recognised under the execution's key (without reading the store), an edited text is put
back from the store, and no plain digest of a text is written beside the journal."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from loom_otel.core import ReasoningConfig, execution
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.continuation.anthropic.loop import MODES, run_loop
from tests.continuation.anthropic.loop import next_turn as _next
from tests.support.stores import FlakyStore

CANARY = "CANARY-keyed-44c0"


@pytest.mark.parametrize("mode", ["sync", "stream", "messages.stream"])
@pytest.mark.parametrize("edit", [False, True])
def test_keyed_digests_keep_the_loop_valid(mode: str, edit: bool, flaky_store: FlakyStore, tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Rain is likely, check first. {CANARY}")
    config = ReasoningConfig(store=flaky_store, journal=tmp_path / "journal", digest="hmac-sha256")
    send = MODES[mode]
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry, execution("run-keyed"):
        history, _ = run_loop(lambda kw: send(sim, kw), mode)
        originals = [b["thinking"] for b in _thinking(sim.requests[-1].body)]
        request = _next(history)
        if edit:
            first = request["messages"][1]
            content = [_as_dict(b) for b in first["content"]]
            content[0] = {**content[0], "thinking": content[0]["thinking"] + " (edited by the app)"}
            request["messages"][1] = {**first, "content": content}
        flaky_store.broken = not edit  # unchanged texts must not need the store
        answer = send(sim, request)
        flaky_store.broken = False
    assert answer.stop_reason in ("tool_use", "end_turn")  # the strict vendor accepted every block
    assert reasoning_events(telemetry.spans, "loom.reasoning.dropped") == []
    assert [b["thinking"] for b in _thinking(sim.requests[-1].body)][: len(originals)] == originals
    plain = sorted({hashlib.sha256(t.encode()).hexdigest() for t in originals})
    assert find_leaks(plain, directories=[tmp_path]) == []


def _thinking(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for m in body["messages"] if m["role"] == "assistant" for b in m["content"] if b["type"] == "thinking"]


def _as_dict(block: Any) -> dict[str, Any]:
    return dict(block) if isinstance(block, dict) else block.model_dump(exclude_none=True)
