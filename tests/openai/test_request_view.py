"""OpenAI's request view (``openai/_request_view``): pure functions of a Responses or Chat Completions
request, with no call, store or span around them."""

from __future__ import annotations

from typing import Any

from openai.types.responses import ResponseReasoningItem

from loom_otel.core.vendor import Block
from loom_otel.core.vendor_helpers import ExecutionScope
from loom_otel.instrumentation.openai._request_view import header_of, item_view, message_key

ITEM: dict[str, Any] = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Check the weather first."}],
    "encrypted_content": "opaque-secret",
}


def test_a_reasoning_item_is_keyed_by_its_encrypted_content_not_its_id() -> None:
    (block,) = item_view(ITEM, redact=False).items
    assert isinstance(block, Block)
    assert item_view({**ITEM, "id": "rs_other", "status": "completed"}, redact=False).items == [block]
    (other,) = item_view({**ITEM, "encrypted_content": "another-secret"}, redact=False).items
    assert isinstance(other, Block) and other.key != block.key
    (plain,) = item_view({k: v for k, v in ITEM.items() if k != "encrypted_content"}, redact=False).items
    assert isinstance(plain, bytes)  # without the vendor's secret an item is an ordinary item


def test_the_sdk_object_reads_as_its_dict() -> None:
    assert item_view(ResponseReasoningItem.model_validate(ITEM), redact=True) == item_view(ITEM, redact=True)


def test_a_chat_message_key_belongs_to_one_scope() -> None:
    message = {"role": "assistant", "content": "It rains.", "tool_calls": []}
    mine = message_key("reasoning_content", message, ExecutionScope("e1", "acme", "alice"))
    assert mine == message_key("reasoning_content", dict(message), ExecutionScope("e1", "acme", "alice"))
    assert mine != message_key("reasoning_content", message, ExecutionScope("e2", "acme", "alice"))
    assert mine != message_key("reasoning_content", message, ExecutionScope("e1", "acme", "bob"))


def test_the_header_changes_with_the_instructions_and_the_tools() -> None:
    first = header_of({"model": "gpt-5", "instructions": "be brief", "tools": [{"type": "web_search"}]})
    assert header_of({"model": "gpt-5", "instructions": "be brief", "tools": [{"type": "web_search"}]}) == first
    assert header_of({"model": "gpt-5", "instructions": "be long", "tools": [{"type": "web_search"}]}) != first
    assert header_of({"model": "gpt-5", "instructions": "be brief"}).tools != first.tools
