"""The request guard on ``messages.batches.create``: each ``requests[i].params`` is checked like a
``messages.create`` request, with positions naming the request (``requests[3].params.system[0].text``)."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import ThinkingBlock
from anthropic.types.messages import batch_create_params

from loom_otel.core import ReasoningConfigError, Untrusted
from loom_otel.instrumentation.anthropic._guard import check_anthropic_batch_request

CANARY = "CANARY-b47c-batched-thought"
U = Untrusted(f"the model thought {CANARY}", origin="llm-reasoning:batch")
F = U.fenced()


def params(**overrides: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are careful."}],
        "messages": [{"role": "user", "content": "hello"}],
    }
    value.update(overrides)
    return value


def batch(*requests: dict[str, Any]) -> dict[str, Any]:
    plain = [batch_create_params.Request(custom_id=f"r{i}", params=params()) for i in range(3)]  # type-checked shape
    return {"requests": [*plain, *requests]}


def refused(kwargs: dict[str, Any], position: str) -> str:
    with pytest.raises(ReasoningConfigError) as info:
        check_anthropic_batch_request(kwargs)
    message = str(info.value)
    assert f"at {position}" in message or f"({position})" in message, message
    assert CANARY not in message and "Anthropic batch request refused" in message
    return message


@pytest.mark.parametrize("value", [U, F, F.upper(), F[1:]])
def test_instruction_positions_of_each_request(value: object) -> None:
    kwargs = batch({"custom_id": "r3", "params": params(system=[{"type": "text", "text": value}])})
    assert "instruction" in refused(kwargs, "requests[3].params.system[0].text")
    tool = {"name": "t", "description": value, "input_schema": {"type": "object"}}
    refused(batch({"custom_id": "r3", "params": params(tools=[tool])}), "requests[3].params.tools[0].description")


def test_fenced_text_in_a_user_message_is_accepted() -> None:
    check_anthropic_batch_request(
        batch({"custom_id": "r3", "params": params(messages=[{"role": "user", "content": F}])})
    )
    refused(
        batch(
            {"custom_id": "r3", "params": params(messages=[{"role": "user", "content": [{"type": "text", "text": U}]}])}
        ),
        "requests[3].params.messages[0].content[0].text",
    )


def test_fenced_text_in_an_assistant_turn_or_outside_params_is_refused() -> None:
    history = [{"role": "user", "content": "q"}, {"role": "assistant", "content": F}]
    refused(batch({"custom_id": "r3", "params": params(messages=history)}), "requests[3].params.messages[1].content")
    refused(batch({"custom_id": F, "params": params()}), "requests[3].custom_id")


def test_reasoning_blocks_only_in_assistant_turns() -> None:
    thinking = ThinkingBlock(type="thinking", thinking="t", signature="sig")
    ok = [{"role": "user", "content": "q"}, {"role": "assistant", "content": [thinking]}]
    check_anthropic_batch_request(batch({"custom_id": "r3", "params": params(messages=ok)}))
    bad = [{"role": "user", "content": [{"type": "text", "text": "hi"}, thinking]}]
    refused(batch({"custom_id": "r3", "params": params(messages=bad)}), "requests[3].params.messages[0].content[1]")


def test_plain_batches_pass() -> None:
    check_anthropic_batch_request(batch())
    check_anthropic_batch_request({"requests": []})
    check_anthropic_batch_request({"requests": (), "extra_headers": {"x-trace": "untrusted"}})
