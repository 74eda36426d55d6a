"""A part goes back only to the provider that produced it: the direct Anthropic API, Claude on Vertex AI
and Claude on Bedrock are three providers for this rule (README "Continuation"), so blocks produced on one
are dropped (``provider_changed``) when the conversation continues on another, through the real SDK
clients against the strict simulator (Vertex's wire adapted to the simulator's Messages endpoint)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest

from loom_otel.core import MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from loom_otel.testing.simulator._clients import anthropic_http
from tests.continuation.anthropic.loop import CANARY, DROPPED, run_loop
from tests.continuation.anthropic.loop import next_turn as _next

HTTP = anthropic_http()  # httpx2, or httpx for anthropic < 1
ALL = ["messages.1.content.0", "messages.3.content.0"]
_VERTEX_PATH = re.compile(r"/publishers/anthropic/models/([^/:]+):(?:streamRawPredict|rawPredict)$")


class Wire:
    """The simulator behind both clients; ``bodies`` holds every request body it answered."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.inner = sim.transport(HTTP)
        self.bodies: list[dict[str, Any]] = []

    def _vertex(self, request: Any) -> Any:
        """Vertex's ``rawPredict``: the model in the path, ``anthropic_version`` in the body."""
        found = _VERTEX_PATH.search(request.url.path)
        assert found is not None, request.url
        body = json.loads(request.content)
        body.pop("anthropic_version", None)
        body["model"] = found[1]
        self.bodies.append(body)
        headers = {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "sim"}
        return self.inner.handle_request(
            HTTP.Request("POST", "https://api.anthropic.sim/v1/messages", headers=headers, json=body)
        )

    def _direct(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.content))
        return self.inner.handle_request(request)

    def client(self, provider: str) -> anthropic.Anthropic | anthropic.AnthropicVertex:
        if provider == "gcp.vertex_ai":
            transport = HTTP.MockTransport(self._vertex)
            http = HTTP.Client(transport=transport)
            return anthropic.AnthropicVertex(
                region="us-east5", project_id="p", access_token="t", http_client=http, max_retries=0
            )
        return self.sim.anthropic_client(http_client=HTTP.Client(transport=HTTP.MockTransport(self._direct)))


def _create(client: Any, kw: dict[str, Any]) -> Any:
    return client.messages.create(**kw)


def _stream(client: Any, kw: dict[str, Any]) -> Any:
    with client.messages.stream(**kw) as stream:
        return stream.get_final_message()


SENDS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {"sync": _create, "messages.stream": _stream}


@pytest.mark.parametrize("mode", list(SENDS))
@pytest.mark.parametrize(
    ("produced_on", "continued_on", "dropped"),
    [
        ("anthropic", "gcp.vertex_ai", [("provider_changed", ALL)]),
        ("gcp.vertex_ai", "anthropic", [("provider_changed", ALL)]),
        ("gcp.vertex_ai", "gcp.vertex_ai", []),
    ],
)
def test_blocks_go_back_only_to_their_provider(
    produced_on, continued_on, dropped, mode, store: MemoryReasoningStore, tmp_path: Path
) -> None:
    wire = Wire(Simulator(strict=True, reasoning_text=f"Rain is likely, check first. {CANARY}"))
    send = SENDS[mode]
    config = ReasoningConfig(store=store, journal=tmp_path / "journal")
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        producer, consumer = wire.client(produced_on), wire.client(continued_on)
        with execution("run-1"):
            history, responses = run_loop(lambda kw: send(producer, kw), mode)
            answer = send(consumer, _next(history))

    assert answer.stop_reason in ("tool_use", "end_turn")  # the vendor accepted what was sent
    last = [s for s in telemetry.spans if s.name.startswith("chat ")][-1]
    assert last.attributes["gen_ai.provider.name"] == continued_on
    events = reasoning_events([last], DROPPED)
    assert [(e["loom.reasoning.drop.reason"], list(e["loom.reasoning.drop.positions"])) for e in events] == dropped
    sent = wire.bodies[-1]["messages"]
    kinds = [[b["type"] for b in m["content"]] for m in sent if m["role"] == "assistant"]
    thinking = [k for k in kinds if "thinking" in k]
    assert len(thinking) == (0 if dropped else 2)
    signatures = [b.signature for r in responses for b in r.content if b.type == "thinking"]
    assert find_leaks([CANARY, *signatures], spans=telemetry.spans, directories=[tmp_path / "journal"]) == []
