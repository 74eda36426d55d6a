"""The simulator's Bedrock Converse side: event-stream framing botocore parses, Bedrock's error shape,
and the Anthropic side's strictness on what it receives."""

from __future__ import annotations

import json

import pytest
from botocore.eventstream import EventStreamBuffer

from loom_otel.testing.simulator import Simulator
from loom_otel.testing.simulator._bedrock import event_message

MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
THINKING = {"thinking": {"type": "enabled", "budget_tokens": 2048}}


def _body(messages: list[dict[str, object]]) -> bytes:
    return json.dumps({"messages": messages, "additionalModelRequestFields": THINKING}).encode()


def _post(sim: Simulator, method: str, messages: list[dict[str, object]]):
    path = f"/model/{MODEL.replace(':', '%3A')}/{method}"
    return sim.handle("POST", path, {}, {"content-type": "application/json"}, _body(messages))


def test_event_messages_parse_with_botocore():
    buffer = EventStreamBuffer()
    buffer.add_data(event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hé"}}))
    buffer.add_data(event_message("messageStop", {"stopReason": "end_turn"}))
    first, second = list(buffer)
    assert first.headers == {
        ":event-type": "contentBlockDelta",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert json.loads(first.payload) == {"contentBlockIndex": 0, "delta": {"text": "hé"}}
    assert second.headers[":event-type"] == "messageStop"


def test_converse_stream_frames_carry_reasoning_deltas():
    sim = Simulator(reasoning_text="think", stream_chunks=2)
    reply = _post(sim, "converse-stream", [{"role": "user", "content": [{"text": "hi"}]}])
    assert reply.stream and reply.content_type == "application/vnd.amazon.eventstream"
    buffer = EventStreamBuffer()
    for chunk in reply.chunks:
        buffer.add_data(chunk)
    events = [(m.headers[":event-type"], json.loads(m.payload)) for m in buffer]
    deltas = [
        p["delta"]["reasoningContent"]
        for kind, p in events
        if kind == "contentBlockDelta" and p["contentBlockIndex"] == 0
    ]
    assert "".join(d.get("text", "") for d in deltas) == "think" and "signature" in deltas[-1]
    assert [kind for kind, _ in events][-2:] == ["messageStop", "metadata"]


@pytest.mark.parametrize("edit", ["text", "signature"])
def test_a_modified_reasoning_block_is_refused(edit):
    sim = Simulator(reasoning_text="think")
    question = {"role": "user", "content": [{"text": "hi"}]}
    answer = json.loads(_post(sim, "converse", [question]).body)["output"]["message"]
    text = answer["content"][0]["reasoningContent"]["reasoningText"]
    middle = len(text[edit]) // 2
    text[edit] = text[edit][:middle] + ("A" if text[edit][middle] != "A" else "B") + text[edit][middle + 1 :]
    reply = _post(sim, "converse", [question, answer, {"role": "user", "content": [{"text": "more"}]}])
    assert reply.status == 400 and reply.headers["x-amzn-ErrorType"] == "ValidationException"
    assert "thinking" in json.loads(reply.body)["message"]
