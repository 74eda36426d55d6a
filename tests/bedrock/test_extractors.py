"""The Converse shapes read as wire fixtures: usage with the prompt cache, finish reasons, reasoning kinds
by model, and a stream rebuilt into the parts of the complete answer."""

from __future__ import annotations

import pytest

from loom_otel.core import ReasoningKind
from loom_otel.instrumentation.bedrock._extractors import (
    ConverseStreamAccumulator,
    reasonings_of,
    request_info,
    response_info,
)

ANSWER = {
    "ResponseMetadata": {"RequestId": "req-1"},
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": "think", "signature": "sig"}}},
                {"reasoningContent": {"redactedContent": b"opaque"}},
                {"text": "Calling."},
                {"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Paris"}}},
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {
        "inputTokens": 10,
        "outputTokens": 7,
        "totalTokens": 17,
        "cacheReadInputTokens": 100,
        "cacheWriteInputTokens": 5,
    },
}
EVENTS = [
    {"messageStart": {"role": "assistant"}},
    {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "thi"}}}},
    {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "nk"}}}},
    {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig"}}}},
    {"contentBlockStop": {"contentBlockIndex": 0}},
    {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"reasoningContent": {"redactedContent": b"opaque"}}}},
    {"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"text": "Calling."}}},
    {"contentBlockStart": {"contentBlockIndex": 3, "start": {"toolUse": {"toolUseId": "t1", "name": "get_weather"}}}},
    {"contentBlockDelta": {"contentBlockIndex": 3, "delta": {"toolUse": {"input": '{"city": '}}}},
    {"contentBlockDelta": {"contentBlockIndex": 3, "delta": {"toolUse": {"input": '"Paris"}'}}}},
    {"messageStop": {"stopReason": "tool_use"}},
    {"metadata": {"usage": ANSWER["usage"], "metrics": {"latencyMs": 3}}},
]


def _request(model: str, stream: bool = False):
    return request_info(None, {"modelId": model, "messages": [], "inferenceConfig": {"topP": 0.9}}, stream=stream)


def test_usage_counts_the_cache_and_reasons_are_normalised():
    info = response_info(ANSWER, _request("anthropic.claude-sonnet-4-5-v1:0"))
    assert info.attributes["gen_ai.usage.input_tokens"] == 115  # the conventions count the cache in
    assert info.attributes["gen_ai.usage.cache_read.input_tokens"] == 100
    assert info.attributes["gen_ai.usage.cache_creation.input_tokens"] == 5
    assert info.attributes["gen_ai.usage.output_tokens"] == 7
    assert info.attributes["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert info.attributes["gen_ai.response.id"] == "req-1"


@pytest.mark.parametrize(
    ("model", "kind"),
    [
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", ReasoningKind.SUMMARY),
        ("us.anthropic.claude-opus-4-1-20250805-v1:0", ReasoningKind.SUMMARY),
        ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", ReasoningKind.TEXT),
        ("us.deepseek.r1-v1:0", ReasoningKind.TEXT),
    ],
)
def test_reasoning_text_is_a_summary_from_claude_4(model, kind):
    thinking, redacted = reasonings_of(ANSWER, _request(model))
    assert (thinking.kind, thinking.text, thinking.signature) == (kind, "think", "sig")
    assert (redacted.kind, redacted.text, redacted.signature) == (ReasoningKind.REDACTED, None, b"opaque")


def test_a_stream_rebuilds_the_parts_of_the_complete_answer():
    request = _request("anthropic.claude-sonnet-4-5-v1:0", stream=True)
    assert request.attributes["gen_ai.request.top_p"] == 0.9
    accumulator = ConverseStreamAccumulator(request, "req-1")
    deltas = [d for event in EVENTS for d in accumulator.feed(event)]
    assert deltas == [(0, "thi"), (0, "nk")]
    reasonings, info = accumulator.result()
    assert [(r.kind, r.text, r.signature) for r in reasonings] == [
        (r.kind, r.text, r.signature) for r in reasonings_of(ANSWER, request)
    ]
    whole = response_info(ANSWER, request)
    assert info.attributes == whole.attributes and info.layout == whole.layout
    assert info.output_messages == whole.output_messages
