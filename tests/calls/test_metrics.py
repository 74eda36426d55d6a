"""The GenAI client metrics against the real SDKs and an in-memory metric reader: names, units, bucket
boundaries, attributes and values per the conventions, streaming included."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from google.genai import types
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from loom_otel.core._calls._handler import ReasoningHandler
from loom_otel.core._calls._metrics import DURATION_BUCKETS, TOKEN_BUCKETS
from loom_otel.core._calls._model_call import RequestInfo
from loom_otel.core._runtime._config import runtime_for
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.anthropic._adapter import AnthropicAdapter
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing import Telemetry
from loom_otel.testing.simulator import Simulator
from tests.calls.helpers import metered, points

CLAUDE = "claude-sonnet-4-6"
REQUEST = {
    "model": CLAUDE,
    "max_tokens": 2048,
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "messages": [{"role": "user", "content": "Weather in Paris?"}],
}
BASE = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "anthropic",
    "gen_ai.request.model": CLAUDE,
    "gen_ai.response.model": CLAUDE,
    "server.address": "api.anthropic.sim",
    "server.port": 443,
}


def _by_type(data_points: list[Any]) -> dict[str, Any]:
    return {p.attributes["gen_ai.token.type"]: p for p in data_points}


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_duration_and_token_usage(config, stream):
    sim = Simulator()
    client = sim.anthropic_client()
    with metered(AnthropicInstrumentor, config) as (telemetry, reader):
        if stream:
            with client.messages.stream(**REQUEST) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**REQUEST)
    (span,) = telemetry.spans
    found = points(reader)
    streamed = {"gen_ai.client.operation.time_to_first_chunk"} if stream else set()
    assert set(found) == {"gen_ai.client.operation.duration", "gen_ai.client.token.usage", *streamed}

    duration, (point,) = found["gen_ai.client.operation.duration"]
    assert duration.unit == "s"
    assert tuple(point.explicit_bounds) == DURATION_BUCKETS
    assert dict(point.attributes) == BASE
    assert point.count == 1
    assert 0 < point.sum <= (span.end_time - span.start_time) / 1e9 + 0.05

    tokens, token_points = found["gen_ai.client.token.usage"]
    assert tokens.unit == "{token}"
    by_type = _by_type(token_points)
    assert set(by_type) == {"input", "output"}
    for token_type, point in by_type.items():
        assert tuple(point.explicit_bounds) == TOKEN_BUCKETS
        assert dict(point.attributes) == {**BASE, "gen_ai.token.type": token_type}
        assert point.count == 1
    assert by_type["input"].sum == span.attributes["gen_ai.usage.input_tokens"] == message.usage.input_tokens
    assert by_type["output"].sum == span.attributes["gen_ai.usage.output_tokens"] == message.usage.output_tokens


def test_failed_call_records_duration_with_error_type_and_no_tokens(config):
    sim = Simulator()
    sim.fail_next(529)
    client = sim.anthropic_client()
    with metered(AnthropicInstrumentor, config) as (_, reader), pytest.raises(anthropic.APIStatusError):
        client.messages.create(**REQUEST)
    found = points(reader)
    assert "gen_ai.client.token.usage" not in found
    _, (point,) = found["gen_ai.client.operation.duration"]
    expected = {k: v for k, v in BASE.items() if k != "gen_ai.response.model"}
    assert dict(point.attributes) == {**expected, "error.type": "OverloadedError"}


def test_gemini_token_usage_counts_thoughts_as_output(config):
    sim = Simulator()
    client = sim.genai_client()
    cfg = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(include_thoughts=True))
    with metered(GoogleGenAiInstrumentor, config) as (_, reader):
        chunks = list(
            client.models.generate_content_stream(model="gemini-3-flash-preview", contents="Rain?", config=cfg)
        )
    usage = chunks[-1].usage_metadata
    _, token_points = points(reader)["gen_ai.client.token.usage"]
    by_type = _by_type(token_points)
    assert by_type["output"].sum == usage.candidates_token_count + usage.thoughts_token_count
    assert by_type["input"].sum == usage.prompt_token_count
    assert by_type["output"].attributes["gen_ai.provider.name"] == "gcp.gemini"


def _handler(reader: InMemoryMetricReader) -> ReasoningHandler:
    runtime = runtime_for(None)
    meters = MeterProvider(metric_readers=[reader])
    return ReasoningHandler(
        Telemetry.in_memory().provider, runtime, "tests", "0", AnthropicAdapter(runtime), meter_provider=meters
    )


def test_time_to_first_chunk_is_recorded_once_for_streams_only():
    reader = InMemoryMetricReader()
    handler = _handler(reader)
    request = RequestInfo("anthropic", "chat", CLAUDE, stream=True, attributes={"server.address": "h"})
    call = handler.call(request)
    call.first_chunk()
    call.first_chunk()
    call.fail(TimeoutError())
    plain = handler.call(RequestInfo("anthropic", "chat", CLAUDE, stream=False))
    plain.first_chunk()
    plain.fail(TimeoutError())
    metric, (point,) = points(reader)["gen_ai.client.operation.time_to_first_chunk"]
    assert metric.unit == "s"
    assert tuple(point.explicit_bounds) == DURATION_BUCKETS
    assert point.count == 1 and point.sum > 0
    assert dict(point.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": CLAUDE,
        "server.address": "h",
    }


def test_streamed_call_records_time_to_first_chunk(config):
    sim = Simulator()
    client = sim.anthropic_client()
    with metered(AnthropicInstrumentor, config) as (_, reader):
        for _ in client.messages.create(stream=True, **REQUEST):
            pass
    _, (point,) = points(reader)["gen_ai.client.operation.time_to_first_chunk"]
    assert point.count == 1
