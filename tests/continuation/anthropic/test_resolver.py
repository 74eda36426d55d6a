"""ADR D3 "the authorizing seam": ``ReasoningConfig(resolve=...)`` gives back the texts a redact-mode
request puts back, in every Anthropic call mode: bytes go out (digest-checked), ``None`` drops the block,
bytes that do not match the digest drop it too, and a resolver that raises fails the call before
anything is sent."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from loom_otel.core import MemoryReasoningStore, ReasoningConfig, ReasoningContinuationError, execution, step
from loom_otel.core._runtime._hooks import TextLookup
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request
from tests.support.anthropic_sdk import assistant_turn

CANARY = "CANARY-resolver-8e3b"


def _thinking_sent(sim: Simulator) -> list[str]:
    body = sim.requests[-1].body
    return [
        b["thinking"]
        for m in body["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "thinking"
    ]


@pytest.mark.parametrize("mode", list(MODES))
def test_the_resolver_decides_what_goes_back(mode: str, tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO)
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}")
    store = MemoryReasoningStore()
    lookups: list[TextLookup] = []
    answer: dict[str, Any] = {}

    def resolve(lookup: TextLookup) -> bytes | None:  # e.g. a key-management service decrypting per tenant
        lookups.append(lookup)
        if answer["outcome"] == "raises":
            raise TimeoutError("kms unreachable")
        if answer["outcome"] == "none":
            return None
        body = store.get(lookup.ref, tenant=lookup.tenant, execution_id=lookup.execution_id)
        assert body is not None
        return body + b" altered" if answer["outcome"] == "altered" else body

    config = ReasoningConfig(store=store, journal=tmp_path / "journal", transcript="redact", resolve=resolve)
    errors: list[str] = []
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        for outcome in ("bytes", "none", "altered", "raises"):
            answer["outcome"] = outcome
            with execution(f"run-{outcome}", tenant="acme", principal="ana"):
                first = MODES[mode](sim, request())
                history = [*request()["messages"], assistant_turn(first), {"role": "user", "content": "And Paris?"}]
                sent = len(sim.requests)
                with step("turn-2"):
                    if outcome == "raises":
                        with pytest.raises(ReasoningContinuationError, match="resolver failed") as info:
                            MODES[mode](sim, request(messages=history))
                        errors.append(str(info.value))
                        assert len(sim.requests) == sent  # nothing was sent
                        continue
                    MODES[mode](sim, request(messages=history))
            thinking = _thinking_sent(sim)
            if outcome == "bytes":
                assert len(thinking) == 1 and CANARY in thinking[0]
            else:
                assert thinking == []  # dropped: a definitive no, or bytes that fail the digest
    assert [(q.tenant, q.execution_id, q.step_id, q.principal) for q in lookups] == [
        ("acme", f"run-{o}", "turn-2", "ana") for o in ("bytes", "none", "altered", "raises")
    ]
    assert all(q.ref and len(q.digest) == 64 for q in lookups)
    dropped = reasoning_events(telemetry.spans, "loom.reasoning.dropped")
    assert [d["loom.reasoning.drop.reason"] for d in dropped] == ["unresolvable", "unresolvable"]
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path], texts=[*errors, caplog.text]) == []
