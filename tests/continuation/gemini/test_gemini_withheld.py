"""Redact mode: an SDK error carries none of the thought text loom-otel put back into the request, in
every call mode. A Gemini stream sends its request when first iterated, so its error comes out of the
stream's iteration (the stream proxy's ``_on_stream_error``), not out of the call: both end the call
through the skeleton's one ``failed``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.genai import errors

from loom_otel.core import MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Reply, Simulator
from tests.continuation.gemini.modes import MODES
from tests.continuation.gemini.scenario import QUESTION, answers, calls_of, config

CANARY = "CANARY-gemini-withheld-4d2e"


@pytest.mark.parametrize("mode", list(MODES))
def test_an_sdk_error_after_thoughts_were_put_back_carries_none(mode: str, tmp_path: Path) -> None:
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=2, stream_chunks=1)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    send, cfg = MODES[mode], config()
    with instrumented(GoogleGenAiInstrumentor(), config=settings) as telemetry, execution("run-withheld"):
        history, _ = send(sim, [], QUESTION, cfg)
        assert calls_of(history)
        sim.fail_next(400)
        with pytest.raises(errors.APIError) as info:
            send(sim, history, answers(history), cfg)
    assert CANARY in json.dumps(sim.requests[-1].body)  # the text was put back: the vendor got it
    exc = info.value
    request = exc.response.request if exc.response is not None else None
    reachable = [str(exc), repr(exc.args), json.dumps(exc.details, default=str)]
    if request is not None:
        reachable.append(request.content.decode(errors="replace"))
    assert request is not None and "[reasoning removed by loom-otel]" in reachable[-1]
    assert find_leaks([CANARY], texts=reachable, spans=telemetry.spans, directories=[tmp_path]) == []
    failed = [s for s in telemetry.spans if s.attributes and s.attributes.get("error.type")]
    assert len(failed) == 1 and len(reasoning_events(telemetry.spans)) == 1  # the first call captured


class _QuotingGateway(Simulator):
    """A gateway that answers the next request with a 400 quoting the request body (some do)."""

    quote = False

    def handle(self, method: str, path: str, query: Any, headers: Any, content: bytes) -> Reply:
        reply = super().handle(method, path, query, headers, content)
        if not self.quote:
            return reply
        self.quote = False
        error = {"code": 400, "message": f"bad request: {content.decode()}", "status": "INVALID_ARGUMENT"}
        return Reply(400, "application/json", (json.dumps({"error": error}).encode(),))


@pytest.mark.parametrize("mode", ["sync", "stream"])
def test_an_error_that_quotes_the_request_carries_none(mode: str, tmp_path: Path) -> None:
    """google-genai keeps the error body as ``details`` too (beside its message and ``args``)."""
    sim = _QuotingGateway(strict=True, reasoning_text=f"Think it through. {CANARY}", stream_chunks=1)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    send, cfg = MODES[mode], config()
    with instrumented(GoogleGenAiInstrumentor(), config=settings), execution("run-withheld"):
        history, _ = send(sim, [], QUESTION, cfg)
        sim.quote = True
        with pytest.raises(errors.APIError) as info:
            send(sim, history, answers(history), cfg)
    exc = info.value
    quoted = json.dumps(exc.details, default=str)
    assert "[reasoning removed by loom-otel]" in quoted  # the quote is there, without the text
    assert find_leaks([CANARY], texts=[str(exc), repr(exc.args), str(exc.message), quoted]) == []


def _thought_texts(body: Any) -> list[str]:
    return [p["text"] for c in body["contents"] for p in c.get("parts", ()) if p.get("thought") and p.get("text")]


@pytest.mark.parametrize("mode", ["stream", "async_stream"])
def test_a_thought_put_back_in_pieces_leaves_no_piece_in_the_error(mode: str, tmp_path: Path) -> None:
    """A streamed thought comes in several parts (one per chunk) and is put back the same way, piece by
    piece: every piece is taken out of an error quoting the request, not only the whole text."""
    words = " ".join(f"{CANARY}-{n}" for n in range(6))
    sim = _QuotingGateway(strict=True, reasoning_text=f"Think it through. {words}", stream_chunks=3)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    send, cfg = MODES[mode], config()
    with instrumented(GoogleGenAiInstrumentor(), config=settings) as telemetry, execution("run-pieces"):
        history, _ = send(sim, [], QUESTION, cfg)
        sim.quote = True
        with pytest.raises(errors.APIError) as info:
            send(sim, history, answers(history), cfg)
    pieces = _thought_texts(sim.requests[-1].body)
    assert len(pieces) == 3 and "".join(pieces) == f"Think it through. {words}"  # put back in three parts
    exc = info.value
    reachable = [str(exc), repr(exc.args), str(exc.message), json.dumps(exc.details, default=str)]
    assert "[reasoning removed by loom-otel]" in reachable[-1]
    assert find_leaks(pieces, texts=reachable, spans=telemetry.spans) == []
