"""google-genai's raw response (``should_return_http_response=True``: the response carries only the HTTP
body, ``sdk_http_response.body``; its streaming methods refuse it): captured from that body, and in redact
mode the body loses the thought text."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest

from loom_otel.core import ReasoningConfig
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.google_genai.helpers import MODEL, THOUGHT, thinking


def _call(sim: Simulator, *, is_async: bool) -> str:
    config = thinking(should_return_http_response=True)
    if is_async:

        async def go() -> str:
            response = await sim.genai_client().aio.models.generate_content(model=MODEL, contents="Hi", config=config)
            return str(response.sdk_http_response.body)

        return asyncio.run(go())
    response = sim.genai_client().models.generate_content(model=MODEL, contents="Hi", config=config)
    assert response.candidates is None
    return str(response.sdk_http_response.body)


@pytest.mark.parametrize("is_async", [False, True])
@pytest.mark.parametrize("transcript", ["keep", "redact"])
def test_raw_body_captured_and_redacted(transcript, is_async, store, journal_dir):
    sim = Simulator(reasoning_text=THOUGHT)
    bare = _call(sim, is_async=is_async)
    config = ReasoningConfig(store=store, journal=journal_dir, transcript=transcript)
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        body = _call(sim, is_async=is_async)
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.digest"] == (hashlib.sha256(THOUGHT.encode()).hexdigest(),)
    blob = store.get(event["loom.reasoning.part.ref"][0], tenant=None, execution_id=event["loom.execution.id"])
    assert blob == THOUGHT.encode()
    if transcript == "keep":
        assert body == bare
    else:
        assert "CANARY" not in body
        parts = json.loads(body)["candidates"][0]["content"]["parts"]
        assert [p.get("thought", False) for p in parts] == [
            p.get("thought", False) for p in json.loads(bare)["candidates"][0]["content"]["parts"]
        ]
    assert find_leaks(["CANARY"], spans=telemetry.spans, directories=[journal_dir]) == []
