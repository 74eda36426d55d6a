"""A lone surrogate in the vendor's thinking text (a ``\\udXXX`` escape in its JSON: half an emoji
cut by the vendor) is captured, digested and read back losslessly, through the real SDK.

(Sending such a text back on the next turn fails inside the SDK itself, with or without loom-otel:
``anthropic._utils._json.openapi_dumps`` encodes the request body strictly.)"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from loom_otel.audit import PartStatus, read_reasoning
from loom_otel.core import ReasoningConfig, execution
from loom_otel.core._evidence._canonical import text_bytes, text_digest
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request

CANARY = "CANARY-5e1f-lone-surrogate"
TEXT = f"Half an emoji \ud83d then the rest. {CANARY}"


def test_the_wire_carries_an_escaped_lone_surrogate() -> None:
    sim = Simulator(reasoning_text=TEXT)
    body = sim.anthropic_client().messages.with_raw_response.create(**request()).http_response.content
    assert b"\\ud83d" in body  # what a vendor's JSON encoder writes for it


@pytest.mark.parametrize("digest", ["sha256", "hmac-sha256"])
@pytest.mark.parametrize("mode", ["sync", "stream", "async_stream", "messages.stream"])
def test_captured_and_read_back_equal(mode: str, digest: str, tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    sim = Simulator(reasoning_text=TEXT)
    store = f"file://{tmp_path / 'store'}"
    config = ReasoningConfig(store=store, journal=tmp_path / "journal", digest=digest)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry, execution("run-s", tenant="acme"):
        message = MODES[mode](sim, request())
    (thinking,) = [b.thinking for b in message.content if b.type == "thinking"]
    assert thinking == TEXT
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.reasoning.part.size"] == (len(text_bytes(TEXT)),)
    if digest == "sha256":
        assert event["loom.reasoning.part.digest"] == (text_digest(TEXT),)
    from loom_otel.core import store_from_uri

    reading = read_reasoning(tmp_path / "journal", store_from_uri(store), execution_id="run-s", tenant="acme")
    ((part,),) = [a.parts for s in reading.steps for a in s.attempts]
    assert part.status is PartStatus.OK and part.text is not None and part.text.text == TEXT
    leaks = find_leaks([CANARY], spans=telemetry.spans, directories=[tmp_path / "journal"], texts=[caplog.text])
    assert leaks == []
