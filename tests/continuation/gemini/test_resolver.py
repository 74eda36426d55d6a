"""ADR D3 "the authorizing seam": ``ReasoningConfig(resolve=...)`` gives back the thoughts a redact-mode
request puts back, in every Gemini call mode: bytes go out (digest-checked), ``None`` drops the thought,
bytes that do not match the digest drop it too, and a resolver that raises fails the call before
anything is sent."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from loom_otel.core import MemoryReasoningStore, ReasoningConfig, ReasoningContinuationError, execution, step
from loom_otel.core._runtime._hooks import TextLookup
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.continuation.gemini.modes import MODES
from tests.continuation.gemini.scenario import NEXT, QUESTION, config

CANARY = "CANARY-gemini-resolver-27fd"


def _thoughts_sent(sim: Simulator) -> list[str]:
    body = sim.requests[-1].body
    return [p["text"] for c in body["contents"] if c["role"] == "model" for p in c["parts"] if p.get("thought")]


@pytest.mark.parametrize("mode", list(MODES))
def test_the_resolver_decides_what_goes_back(mode: str, tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO)
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", stream_chunks=3)
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

    settings = ReasoningConfig(store=store, journal=tmp_path / "journal", transcript="redact", resolve=resolve)
    errors: list[str] = []
    cfg = config(tools=())
    with instrumented(GoogleGenAiInstrumentor(), config=settings) as telemetry:
        for outcome in ("bytes", "none", "altered", "raises"):
            answer["outcome"] = outcome
            with execution(f"run-{outcome}", tenant="acme", principal="ana"):
                history, _ = MODES[mode](sim, [], QUESTION, cfg)
                sent = len(sim.requests)
                with step("turn-2"):
                    if outcome == "raises":
                        with pytest.raises(ReasoningContinuationError, match="resolver failed") as info:
                            MODES[mode](sim, history, NEXT, cfg)
                        errors.append(str(info.value))
                        assert len(sim.requests) == sent  # nothing was sent
                        continue
                    MODES[mode](sim, history, NEXT, cfg)
            thoughts = "".join(_thoughts_sent(sim))
            if outcome == "bytes":
                assert CANARY in thoughts
            else:
                assert CANARY not in thoughts  # dropped: a definitive no, or bytes that fail the digest
    assert {(q.tenant, q.execution_id, q.step_id, q.principal) for q in lookups} == {
        ("acme", f"run-{o}", "turn-2", "ana") for o in ("bytes", "none", "altered", "raises")
    }
    assert all(q.ref and len(q.digest) == 64 for q in lookups)
    dropped = reasoning_events(telemetry.spans, "loom.reasoning.dropped")
    unresolvable = [d for d in dropped if d["loom.reasoning.drop.reason"] == "unresolvable"]
    assert len(unresolvable) == 2  # "none" and "altered" (the parts bound to the thought follow it out)
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path], texts=[*errors, caplog.text]) == []
