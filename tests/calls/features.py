"""Measure what one GenAI instrumentation records for the same Anthropic calls (the feature table)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from loom_otel.core import MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.core._scrub import forget_all
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import Telemetry, find_leaks
from loom_otel.testing.simulator import Simulator
from tests.calls.helpers import metered, points

CANARY = "CANARY-f3a7-table: think before the tool call."
NAMES = ("official", "openinference", "openllmetry", "loom-otel")
FEATURES = (
    "one model-call span per call",
    "request parameters (stop sequences)",
    "input tokens include cache read + creation",
    "cache creation tokens",
    "reasoning output tokens",
    "normalised finish reasons",
    "schema_url",
    "conversation id (explicit execution)",
    "gen_ai.client.token.usage",
    "gen_ai.client.operation.duration",
    "time to first chunk (stream)",
    "input/output messages (SPAN_ONLY)",
    "no reasoning text or signature exported",
)


@contextmanager
def _other(name: str, journal: Any) -> Iterator[tuple[Telemetry, InMemoryMetricReader]]:
    if name == "loom-otel":
        config = ReasoningConfig(store=MemoryReasoningStore(), journal=journal)
        with metered(AnthropicInstrumentor, config) as found:
            yield found
        return
    if name == "official":
        from opentelemetry.instrumentation.genai.anthropic import AnthropicInstrumentor as Official

        instrumentor: Any = Official()
    elif name == "openinference":
        from openinference.instrumentation.anthropic import AnthropicInstrumentor as OpenInference

        instrumentor = OpenInference()
    else:
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor as OpenLLMetry

        instrumentor = OpenLLMetry()
    telemetry = Telemetry.in_memory()
    reader = InMemoryMetricReader()
    instrumentor.instrument(tracer_provider=telemetry.provider, meter_provider=MeterProvider(metric_readers=[reader]))
    try:
        yield telemetry, reader
    finally:
        instrumentor.uninstrument()


def _calls(client: Any) -> tuple[list[Any], list[str]]:
    content = [{"type": "text", "text": "A long shared document. " * 40, "cache_control": {"type": "ephemeral"}}]
    request: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 2048,
        "stop_sequences": ["END"],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [{"role": "user", "content": content}],
    }
    messages = []
    with execution("conv-1"):
        messages.append(client.messages.create(**request))
        messages.append(client.messages.create(**request))
        with client.messages.stream(**request) as stream:
            messages.append(stream.get_final_message())
    signatures = [b.signature for m in messages for b in m.content if b.type == "thinking"]
    return messages, signatures


def measure(name: str, journal: Any) -> dict[str, bool]:
    """Each feature: does ``name`` record it for three calls (two complete, one streamed)?"""
    if name != "loom-otel":
        forget_all()  # a peer alone: what loom-otel captured in earlier tests is not scrubbed from its spans
    saved = dict(os.environ)
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    try:
        with _other(name, journal) as (telemetry, reader):
            messages, signatures = _calls(Simulator(reasoning_text=CANARY).anthropic_client())
    finally:
        os.environ.clear()
        os.environ.update(saved)
    spans = [s for s in telemetry.spans if _is_model_call(s)]
    found = points(reader)
    second = messages[1].usage
    total = second.input_tokens + second.cache_read_input_tokens + second.cache_creation_input_tokens
    attrs: list[dict[str, Any]] = [dict(s.attributes or {}) for s in spans]

    def any_attr(test: Callable[[dict[str, Any]], bool]) -> bool:
        return any(test(a) for a in attrs)

    return {
        "one model-call span per call": len(spans) == len(messages),
        "request parameters (stop sequences)": any_attr(
            lambda a: tuple(a.get("gen_ai.request.stop_sequences", ())) == ("END",)
        ),
        "input tokens include cache read + creation": any_attr(lambda a: a.get("gen_ai.usage.input_tokens") == total),
        "cache creation tokens": any_attr(lambda a: "gen_ai.usage.cache_creation.input_tokens" in a),
        "reasoning output tokens": any_attr(lambda a: "gen_ai.usage.reasoning.output_tokens" in a),
        "normalised finish reasons": bool(attrs)
        and all(set(a.get("gen_ai.response.finish_reasons", ("?",))) <= {"stop", "tool_call", "length"} for a in attrs),
        "schema_url": bool(spans) and all(s.instrumentation_scope.schema_url for s in spans),
        "conversation id (explicit execution)": any_attr(lambda a: a.get("gen_ai.conversation.id") == "conv-1"),
        "gen_ai.client.token.usage": "gen_ai.client.token.usage" in found,
        "gen_ai.client.operation.duration": "gen_ai.client.operation.duration" in found,
        "time to first chunk (stream)": "gen_ai.client.operation.time_to_first_chunk" in found,
        "input/output messages (SPAN_ONLY)": any_attr(
            lambda a: _is_json(a.get("gen_ai.input.messages")) and _is_json(a.get("gen_ai.output.messages"))
        ),
        "no reasoning text or signature exported": find_leaks([CANARY, *signatures], spans=telemetry.spans) == [],
    }


def _is_model_call(span: Any) -> bool:
    keys = span.attributes or {}
    return any(k.startswith("gen_ai.") for k in keys) or keys.get("openinference.span.kind") == "LLM"


def _is_json(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


def table(journal: Any) -> str:
    rows = {name: measure(name, journal / name) for name in NAMES}
    lines = ["| feature | " + " | ".join(NAMES) + " |", "|---|" + "---|" * len(NAMES)]
    for feature in FEATURES:
        lines.append(f"| {feature} | " + " | ".join("yes" if rows[n][feature] else "no" for n in NAMES) + " |")
    return "\n".join(lines)
