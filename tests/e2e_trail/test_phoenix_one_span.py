"""Telemetry citizenship end to end, in Arize Phoenix (a real GenAI tracing backend): loom-otel alone with
the anthropic SDK's own tracing on, and beside the official OTel, OpenInference and OpenLLMetry
instrumentations in both orders. Per model call Phoenix holds exactly one LLM span; its token total is
the simulator's usage; its output messages show the reasoning as loom-otel's reference, never text; a
filter on ``loom.execution.id`` finds the conversation's spans."""

from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks
from loom_otel.testing.simulator import Simulator
from tests.support.phoenix import PhoenixServer, get_json, wait_until
from tests.support.tools import WEATHER

pytestmark = pytest.mark.slow
CANARY = "CANARY-phoenix-one-span-61fa"


def _peer(module: str) -> Callable[[], BaseInstrumentor]:
    def make() -> BaseInstrumentor:
        import importlib

        instrumentor: BaseInstrumentor = importlib.import_module(module).AnthropicInstrumentor()
        return instrumentor

    return make


PEERS: dict[str, Callable[[], BaseInstrumentor] | None] = {
    "alone": None,
    "official": _peer("opentelemetry.instrumentation.genai.anthropic"),
    "openinference": _peer("openinference.instrumentation.anthropic"),
    "openllmetry": _peer("opentelemetry.instrumentation.anthropic"),
}


def _graphql(base: str, query: str) -> Any:
    request = urllib.request.Request(
        f"{base}/graphql", data=json.dumps({"query": query}).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _conversation(sim: Simulator, provider: TracerProvider) -> list[Any]:
    """A tool round and its answer: two model calls of one conversation (the SDK's own tracing on)."""
    client = sim.anthropic_client(open_telemetry={"tracer_provider": provider})
    kw = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": {"type": "adaptive"}, "tools": [WEATHER]}
    history: list[Any] = [{"role": "user", "content": "Plan a rainy-day walk in Lyon."}]
    first = client.messages.create(**kw, messages=history)
    call = next(b for b in first.content if b.type == "tool_use")
    result = {"type": "tool_result", "tool_use_id": call.id, "content": "rain"}
    second = client.messages.create(**kw, messages=[*history, first.to_param(), {"role": "user", "content": [result]}])
    return [first, second]


@pytest.mark.parametrize(
    ("peer", "order"),
    [("alone", "-"), *((p, o) for p in PEERS if p != "alone" for o in ("loom_first", "peer_first"))],
)
def test_one_llm_span_per_call_in_phoenix(
    peer: str, order: str, phoenix: PhoenixServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, grpc_port = phoenix.base, phoenix.grpc_port
    project = f"one-span-{peer}-{order}".replace("_", "-")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    provider = TracerProvider(resource=Resource.create({"openinference.project.name": project}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True)))
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal")
    sim = Simulator(reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=1)
    loom, make = AnthropicInstrumentor(), PEERS[peer]
    theirs = make() if make is not None else None
    with contextlib.ExitStack() as stack:
        if theirs is not None and order == "peer_first":
            theirs.instrument(tracer_provider=provider)
            stack.callback(theirs.uninstrument)
        loom.instrument(tracer_provider=provider, config=config, skip_dep_check=True)
        stack.callback(loom.uninstrument)
        if theirs is not None and order == "loom_first":
            theirs.instrument(tracer_provider=provider)
            stack.callback(theirs.uninstrument)
        messages = _conversation(sim, provider)
    provider.shutdown()

    def spans() -> list[dict[str, Any]] | None:
        found = get_json(f"{base}/v1/projects/{project}/spans?limit=100")["data"]
        return found if len([s for s in found if s["span_kind"] == "LLM"]) >= 2 else None

    found = wait_until(spans, 120, f"the LLM spans of {project} in Phoenix")
    llm = [s for s in found if s["span_kind"] == "LLM"]
    assert len(llm) == len(messages) == 2, [(s["name"], s["span_kind"]) for s in found]
    expected = sum(m.usage.input_tokens + m.usage.output_tokens for m in messages)
    assert sum(int(s["attributes"]["llm.token_count.total"]) for s in llm) == expected
    outputs = [s["attributes"].get("llm.output_messages.0.message.contents.0.message_content.text") for s in llm]
    if peer in ("alone", "official") or (order == "loom_first" and peer == "official"):
        assert all(o and o.startswith("[loom-otel reasoning text ref=") for o in outputs), outputs
    assert find_leaks([CANARY], texts=[json.dumps(found)]) == []
    execution = next(s["attributes"]["loom.execution.id"] for s in found if "loom.execution.id" in s["attributes"])
    condition = f"attributes['loom']['execution']['id'] == '{execution}'"  # Phoenix nests dotted keys
    spans_query = f"spans(first: 50, filterCondition: {json.dumps(condition)}) {{ edges {{ node {{ name }} }} }}"
    answer = _graphql(base, f"{{ projects {{ edges {{ node {{ name {spans_query} }} }} }} }}")
    (node,) = [e["node"] for e in answer["data"]["projects"]["edges"] if e["node"]["name"] == project]
    assert len(node["spans"]["edges"]) >= 2
