"""The request view (``anthropic/_request_view``): pure functions of a request, tested on the recorded
wire answer (``tests/fixtures/wire``) put back as the application's next request, with no call, store
or span around them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from anthropic.types import Message

from loom_otel.core.vendor import Block
from loom_otel.instrumentation.anthropic._request_view import header_of, message_view

WIRE = Path(__file__).resolve().parents[2] / "fixtures" / "wire" / "anthropic_thinking_tool_use.json"


def _assistant_turn() -> dict[str, Any]:
    answer = json.loads(WIRE.read_text())
    return {"role": "assistant", "content": answer["content"]}


def test_a_thinking_block_is_keyed_by_its_signature_and_the_tool_call_names_the_round() -> None:
    turn = _assistant_turn()
    view = message_view(turn)
    blocks = [item for item in view.items if isinstance(item, Block)]
    assert len(blocks) == 1 and view.head == b"M\x00assistant\x00"
    tool_use = next(b for b in turn["content"] if b["type"] == "tool_use")
    assert view.round_key == tool_use["id"]
    edited = copy.deepcopy(turn)
    edited["content"][0]["thinking"] = "text the application changed"  # the text is checked apart
    assert next(i for i in message_view(edited).items if isinstance(i, Block)).key == blocks[0].key
    edited["content"][0]["signature"] = "another signature"
    assert next(i for i in message_view(edited).items if isinstance(i, Block)).key != blocks[0].key


def test_the_sdk_object_and_its_dict_read_the_same_and_cache_control_is_ignored() -> None:
    turn = _assistant_turn()
    message = Message.model_validate(json.loads(WIRE.read_text()))  # its blocks as SDK objects
    assert message_view({"role": "assistant", "content": message.content}).items == message_view(turn).items
    marked = copy.deepcopy(turn)
    marked["content"][-1]["cache_control"] = {"type": "ephemeral"}
    assert message_view(marked).items == message_view(turn).items


def test_the_header_changes_with_the_system_and_the_tools_only() -> None:
    tools = [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}}]
    first = header_of("anthropic", {"model": "claude-sonnet-4-6", "system": "be brief", "tools": tools})
    assert header_of("anthropic", {"model": "claude-sonnet-4-6", "system": "be brief", "tools": tools}) == first
    assert header_of("anthropic", {"model": "claude-sonnet-4-6", "system": "be long", "tools": tools}) != first
    assert header_of("anthropic", {"model": "claude-sonnet-4-6", "system": "be brief"}).tools != first.tools
