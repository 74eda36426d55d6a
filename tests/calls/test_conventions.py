"""The GenAI semantic conventions on the model-call span, per vendor, against the real SDKs and the
simulator: request parameters, output type, usage as the conventions count it, normalised finish
reasons, ``schema_url``, and the execution as span attributes."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from google.genai import types

from loom_otel.core import execution
from loom_otel.core._calls._semconv import SCHEMA_URL
from loom_otel.core._runtime._shapes import field
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from loom_otel.testing.simulator._clients import anthropic_http
from tests.support.anthropic_sdk import requires_anthropic

CLAUDE = "claude-sonnet-4-6"
GEMINI = "gemini-3-flash-preview"


def _one(telemetry: Any, name: str) -> Any:
    (span,) = [s for s in telemetry.spans if s.name == name]
    assert span.instrumentation_scope.schema_url == SCHEMA_URL
    return span


def _thinking(**extra: Any) -> dict[str, Any]:
    return {
        "model": CLAUDE,
        "max_tokens": 2048,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        **extra,
    }


def test_anthropic_request_parameters_and_types(config):
    sim = Simulator()
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        sim.anthropic_client().messages.create(
            **_thinking(stop_sequences=["END", "STOP"], extra_body={"temperature": 1, "top_p": 0.95, "top_k": 40})
        )
    attrs = _one(telemetry, f"chat {CLAUDE}").attributes
    assert attrs["gen_ai.request.max_tokens"] == 2048 and type(attrs["gen_ai.request.max_tokens"]) is int
    assert attrs["gen_ai.request.temperature"] == 1.0 and type(attrs["gen_ai.request.temperature"]) is float
    assert attrs["gen_ai.request.top_p"] == 0.95
    assert attrs["gen_ai.request.top_k"] == 40.0 and type(attrs["gen_ai.request.top_k"]) is float
    assert attrs["gen_ai.request.stop_sequences"] == ("END", "STOP")
    assert "gen_ai.request.seed" not in attrs and "gen_ai.output.type" not in attrs
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)


@requires_anthropic("0.77", "messages.create(output_config=)")
def test_anthropic_structured_output_is_json(config):
    sim = Simulator()
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        sim.anthropic_client().messages.create(
            model=CLAUDE,
            max_tokens=256,
            messages=[{"role": "user", "content": "City?"}],
            output_config={"format": {"type": "json_schema", "schema": schema}},
        )
    assert _one(telemetry, f"chat {CLAUDE}").attributes["gen_ai.output.type"] == "json"


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_input_tokens_include_cache_read_and_creation(config, stream):
    sim = Simulator()
    content = [{"type": "text", "text": "A long shared document. " * 40, "cache_control": {"type": "ephemeral"}}]
    request = _thinking(messages=[{"role": "user", "content": content}])
    client = sim.anthropic_client()
    usages = []
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        for _ in range(2):
            if stream:
                with client.messages.stream(**request) as s:
                    usages.append(s.get_final_message().usage)
            else:
                usages.append(client.messages.create(**request).usage)
    spans = [s for s in telemetry.spans if s.name == f"chat {CLAUDE}"]
    assert len(spans) == 2
    first, second = usages
    assert first.cache_creation_input_tokens > 0 and first.cache_read_input_tokens == 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    for span, usage in zip(spans, usages, strict=True):
        attrs = span.attributes
        total = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        assert attrs["gen_ai.usage.input_tokens"] == total
        assert attrs["gen_ai.usage.cache_read.input_tokens"] == usage.cache_read_input_tokens
        assert attrs["gen_ai.usage.cache_creation.input_tokens"] == usage.cache_creation_input_tokens
        assert attrs["gen_ai.usage.output_tokens"] == usage.output_tokens
        # The SDK's count: a dict before anthropic 1; none in the stream helper's message before 0.122.
        thinking = field(field(usage, "output_tokens_details"), "thinking_tokens")
        assert attrs["gen_ai.usage.reasoning.output_tokens"] > 0
        assert thinking in (None, attrs["gen_ai.usage.reasoning.output_tokens"]) and (thinking or stream)


def test_anthropic_tool_use_is_tool_call(config):
    sim = Simulator()
    tools = [{"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}}]
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        message = sim.anthropic_client().messages.create(**_thinking(tools=tools))
    assert message.stop_reason == "tool_use"
    assert _one(telemetry, f"chat {CLAUDE}").attributes["gen_ai.response.finish_reasons"] == ("tool_call",)


def test_execution_scope_sets_execution_and_conversation_on_the_span(config):
    sim = Simulator()
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry, execution("exec-42"):
        sim.anthropic_client().messages.create(**_thinking())
    attrs = _one(telemetry, f"chat {CLAUDE}").attributes
    assert attrs["loom.execution.id"] == "exec-42"
    assert attrs["gen_ai.conversation.id"] == "exec-42"


def test_a_new_execution_is_the_conversation(config):
    """DESIGN "Execution identity": a conversation is one execution (joined across calls by its
    reasoning blocks), so the execution is the span's conversation id even when it is new (its id is
    then its first call's trace id), unless the app or a framework set one."""
    sim = Simulator()
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        sim.anthropic_client().messages.create(**_thinking())
    span = _one(telemetry, f"chat {CLAUDE}")
    assert span.attributes["loom.execution.id"] == format(span.context.trace_id, "032x")
    assert span.attributes["gen_ai.conversation.id"] == span.attributes["loom.execution.id"]


def test_a_failed_or_abandoned_call_carries_its_execution(config):
    """The execution goes on the span with its last attributes: with the error type of a failed call,
    with the outcome of a stream closed early, with the response of a complete one."""
    canary = "CANARY-last-attributes-5d21"
    sim = Simulator(reasoning_text=f"Check the forecast first. {canary}")

    http = anthropic_http()  # httpx2, or httpx for anthropic < 1

    def overloaded(request: Any) -> Any:
        error = {"type": "error", "error": {"type": "overloaded_error", "message": "try later"}}
        return http.Response(529, json=error, request=request)

    failing = sim.anthropic_client(http_client=http.Client(transport=http.MockTransport(overloaded)))
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with pytest.raises(anthropic.APIStatusError):
            failing.messages.create(**_thinking())
        stream = sim.anthropic_client().messages.create(**_thinking(), stream=True)
        next(iter(stream))
        stream.close()
        sim.anthropic_client().messages.create(**_thinking())
    spans = [s for s in telemetry.spans if s.name == f"chat {CLAUDE}"]
    assert [s.attributes.get("error.type") for s in spans] == ["OverloadedError", None, None]
    assert [s.attributes.get("loom.stream.outcome") for s in spans] == [None, "closed_early", None]
    for span in spans:
        assert span.attributes["loom.execution.id"] == format(span.context.trace_id, "032x")
        assert span.attributes["gen_ai.conversation.id"] == span.attributes["loom.execution.id"]
    assert find_leaks([canary], spans=telemetry.spans) == []


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_parameters_and_output_tokens_include_thoughts(config, stream):
    sim = Simulator()
    cfg = types.GenerateContentConfig(
        thinking_config=types.ThinkingConfig(include_thoughts=True),
        temperature=0.2,
        top_p=0.9,
        top_k=20,
        stop_sequences=["END"],
        max_output_tokens=512,
        seed=7,
        frequency_penalty=0.5,
        presence_penalty=0.25,
        candidate_count=1,
        response_mime_type="application/json",
    )
    client = sim.genai_client()
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        if stream:
            chunks = list(client.models.generate_content_stream(model=GEMINI, contents="Rain?", config=cfg))
            usage = chunks[-1].usage_metadata
        else:
            usage = client.models.generate_content(model=GEMINI, contents="Rain?", config=cfg).usage_metadata
    attrs = _one(telemetry, f"generate_content {GEMINI}").attributes
    assert attrs["gen_ai.request.temperature"] == 0.2
    assert attrs["gen_ai.request.top_p"] == 0.9
    assert attrs["gen_ai.request.top_k"] == 20.0 and type(attrs["gen_ai.request.top_k"]) is float
    assert attrs["gen_ai.request.stop_sequences"] == ("END",)
    assert attrs["gen_ai.request.max_tokens"] == 512
    assert attrs["gen_ai.request.seed"] == 7 and type(attrs["gen_ai.request.seed"]) is int
    assert attrs["gen_ai.request.frequency_penalty"] == 0.5
    assert attrs["gen_ai.request.presence_penalty"] == 0.25
    assert "gen_ai.request.choice.count" not in attrs  # 1 is the default
    assert attrs["gen_ai.output.type"] == "json"
    assert usage.thoughts_token_count > 0
    assert attrs["gen_ai.usage.output_tokens"] == usage.candidates_token_count + usage.thoughts_token_count
    assert attrs["gen_ai.usage.reasoning.output_tokens"] == usage.thoughts_token_count
    # the count Phoenix's token breakdown reads (it maps no gen_ai reasoning tokens)
    assert attrs["llm.token_count.completion_details.reasoning"] == usage.thoughts_token_count
    assert attrs["gen_ai.usage.input_tokens"] == usage.prompt_token_count
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)


def test_gemini_function_call_stop_is_tool_call(config):
    sim = Simulator()

    def get_weather(location: str) -> str:
        """Returns the weather forecast for a location."""
        return f"Sunny in {location}."

    cfg = types.GenerateContentConfig(
        tools=[get_weather],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        thinking_config=types.ThinkingConfig(include_thoughts=True),
    )
    client = sim.genai_client()
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        response = client.models.generate_content(model=GEMINI, contents="Rain in Lyon?", config=cfg)
    assert response.function_calls
    assert _one(telemetry, f"generate_content {GEMINI}").attributes["gen_ai.response.finish_reasons"] == ("tool_call",)


def test_openai_chat_parameters(config):
    sim = Simulator()
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        sim.openai_client().chat.completions.create(
            model="deepseek-reasoner",
            messages=[{"role": "user", "content": "Cheaper?"}],
            max_tokens=300,
            temperature=0.5,
            top_p=1,
            stop="END",
            seed=3,
            frequency_penalty=0.1,
            presence_penalty=0.2,
            n=2,
            response_format={"type": "json_object"},
        )
    attrs = _one(telemetry, "chat deepseek-reasoner").attributes
    assert attrs["gen_ai.request.max_tokens"] == 300
    assert attrs["gen_ai.request.temperature"] == 0.5
    assert attrs["gen_ai.request.top_p"] == 1.0 and type(attrs["gen_ai.request.top_p"]) is float
    assert attrs["gen_ai.request.stop_sequences"] == ("END",)
    assert attrs["gen_ai.request.seed"] == 3
    assert attrs["gen_ai.request.frequency_penalty"] == 0.1
    assert attrs["gen_ai.request.presence_penalty"] == 0.2
    assert attrs["gen_ai.request.choice.count"] == 2
    assert attrs["gen_ai.output.type"] == "json"
    assert set(attrs["gen_ai.response.finish_reasons"]) <= {"stop", "length", "tool_call", "content_filter"}


def test_openai_chat_tool_calls_is_tool_call(config):
    sim = Simulator()
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        completion = sim.openai_client().chat.completions.create(
            model="deepseek-reasoner", messages=[{"role": "user", "content": "Cheaper?"}], tools=tools
        )
    assert completion.choices[0].finish_reason == "tool_calls"
    assert _one(telemetry, "chat deepseek-reasoner").attributes["gen_ai.response.finish_reasons"] == ("tool_call",)


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses_completed_is_stop(config, stream):
    sim = Simulator()
    kwargs: dict[str, Any] = {
        "model": "o4-mini",
        "input": "Cheaper?",
        "reasoning": {"summary": "auto"},
        "max_output_tokens": 900,
        "temperature": 1,
        "top_p": 0.5,
        "text": {"format": {"type": "text"}},
    }
    client = sim.openai_client()
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        if stream:
            events = list(client.responses.create(stream=True, **kwargs))
            status = events[-1].response.status
        else:
            status = client.responses.create(**kwargs).status
    assert status == "completed"
    attrs = _one(telemetry, "chat o4-mini").attributes
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs["gen_ai.request.max_tokens"] == 900
    assert attrs["gen_ai.request.temperature"] == 1.0 and attrs["gen_ai.request.top_p"] == 0.5
    assert attrs["gen_ai.output.type"] == "text"
    assert type(attrs["gen_ai.usage.reasoning.output_tokens"]) is int
    assert attrs["llm.token_count.completion_details.reasoning"] == attrs["gen_ai.usage.reasoning.output_tokens"]


def test_openai_responses_function_call_is_tool_call(config):
    sim = Simulator()
    tools = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        response = sim.openai_client().responses.create(
            model="o4-mini", input="Cheaper?", reasoning={"summary": "auto"}, tools=tools
        )
    assert any(item.type == "function_call" for item in response.output)
    assert _one(telemetry, "chat o4-mini").attributes["gen_ai.response.finish_reasons"] == ("tool_call",)
