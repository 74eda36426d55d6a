"""Bedrock's request view (``bedrock/_request_view``): pure functions of a Converse request, with no
call, store or span around them."""

from __future__ import annotations

import copy
from typing import Any

from loom_otel.core.vendor import Block
from loom_otel.instrumentation.bedrock._request_view import header_of, message_view


def _turn() -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"reasoningContent": {"reasoningText": {"text": "Check the weather first.", "signature": "sig-1"}}},
            {"reasoningContent": {"redactedContent": b"\x00opaque"}},
            {"toolUse": {"toolUseId": "tool-1", "name": "get_weather", "input": {"city": "Lyon"}}},
        ],
    }


def _blocks(message: dict[str, Any]) -> list[Block]:
    return [item for item in message_view(message).items if isinstance(item, Block)]


def test_reasoning_blocks_are_keyed_by_signature_or_redacted_bytes_and_the_tool_call_names_the_round() -> None:
    turn = _turn()
    view = message_view(turn)
    first, redacted = _blocks(turn)
    assert view.round_key == "tool-1" and view.head == b"M\x00assistant\x00"
    edited = copy.deepcopy(turn)
    edited["content"][0]["reasoningContent"]["reasoningText"]["text"] = "changed"  # the text is checked apart
    assert _blocks(edited)[0].key == first.key
    edited["content"][0]["reasoningContent"]["reasoningText"]["signature"] = "sig-2"
    assert _blocks(edited)[0].key != first.key
    edited["content"][1]["reasoningContent"]["redactedContent"] = b"\x00other"
    assert _blocks(edited)[1].key != redacted.key


def test_none_fields_are_left_out_as_botocore_leaves_them() -> None:
    turn = _turn()
    with_none = copy.deepcopy(turn)
    with_none["content"][2]["toolUse"]["extra"] = None
    assert message_view(with_none).items == message_view(turn).items


def test_the_header_changes_with_the_system_and_the_tools() -> None:
    tools = {"tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": {"type": "object"}}}}]}
    kwargs: dict[str, Any] = {"modelId": "m", "system": [{"text": "be brief"}], "toolConfig": tools}
    first = header_of(kwargs)
    assert header_of(copy.deepcopy(kwargs)) == first
    assert header_of({**kwargs, "system": [{"text": "be long"}]}).system != first.system
    assert header_of({**kwargs, "toolConfig": None}).tools != first.tools
