"""Anthropic Messages as the continuation rule reads a request: pure functions (no call state, no I/O).

What is canonicalized is what the SDK will send, read the way the API reads it: dicts and SDK pydantic
objects alike (``Message.to_param()`` hands back pydantic blocks), ``None`` fields, ``cache_control``
and empty citations ignored, a string content read as one text block. A thinking block is identified by
its signature (its text is checked separately against the recorded digest), so a block the application
holds without text (``transcript="redact"``) binds exactly like the one the vendor returned.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from loom_otel.core.vendor import (
    Block,
    Header,
    MessageView,
)
from loom_otel.core.vendor_helpers import (
    BoundedMemo,
    DigestMemo,
    is_mapping,
    text_bytes,
)
from loom_otel.core.vendor_helpers import field as _get

__all__ = [
    "ASSISTANT_HEAD",
    "REASONING_KINDS",
    "TOOL_CALLS",
    "content_of",
    "header_of",
    "message_view",
    "norm_value",
    "plain_bytes",
    "reasoning_block",
]

REASONING_KINDS: Final = frozenset({"thinking", "redacted_thinking"})
_IGNORED: Final = frozenset({"cache_control"})
TOOL_CALLS: Final = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
ASSISTANT_HEAD: Final = b"M\x00assistant\x00"


def norm_value(value: Any) -> Any:
    """One reading of a JSON-ish value: ``None``, ``cache_control`` and empty citations left out."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is float:
        return value
    if is_mapping(value):
        return {
            str(k): norm_value(v)
            for k, v in value.items()
            if v is not None and k not in _IGNORED and not (k == "citations" and not v)
        }
    if kind is list or kind is tuple:
        return [norm_value(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        flat = _scalar_fields(value)
        return flat if flat is not None else norm_value(dump(mode="json", exclude_none=True))
    return value


def _scalar_fields(model: Any) -> dict[str, Any] | None:
    """What ``norm_value(model.model_dump(mode="json", exclude_none=True))`` gives, read off the fields, for a
    model whose every value is a plain scalar (a text block): ``None`` otherwise (the dump is needed)."""
    if model.__pydantic_extra__ or type(model).model_computed_fields:
        return None
    out: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        kind = type(value)
        if value is None or name in _IGNORED or (kind is list and not value and name == "citations"):
            continue
        if kind is not str and kind is not int and kind is not bool and kind is not float:
            return None
        out[name] = value
    return out


_ENCODE: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def _json(value: Any) -> bytes:
    return text_bytes(_ENCODE(value))


def _plain_value(block: Any) -> Any:
    norm = norm_value(block)
    if type(norm) is dict:
        if norm.get("type") == "tool_result" and type(norm.get("content")) is str:
            norm["content"] = [{"type": "text", "text": norm["content"]}]
        if norm.get("is_error") is False:
            del norm["is_error"]
    return norm


def plain_bytes(block: Any) -> bytes:
    """The canonical bytes of an ordinary (non-reasoning) block as the API reads it."""
    return _json(_plain_value(block))


_KEYS: Final = {kind: DigestMemo(kind.encode() + b"\x00", 65536) for kind in REASONING_KINDS}
"""The record keys of each kind's signatures (a loop resends the same strings every turn)."""
_TEXTS: BoundedMemo[str, bytes] = BoundedMemo(16384)


def _key(kind: str, token: str) -> bytes:
    """The record key of a signature: SHA-256 of its kind and the signature."""
    return _KEYS[kind](token)


def _canon(kind: str, key: bytes) -> bytes:
    return b"\x01" + kind.encode() + b"\x00" + key


def reasoning_block(block: Any, kind: str, known: Callable[[bytes], bool] | None = None) -> Block | None:
    """The block model of a reasoning block. With ``known`` (the binding records), a
    ``redacted_thinking`` whose ``data`` is a recorded thinking block's signature (google-adk's form of
    an emptied thinking block) is read as that thinking block, without text: it is put back as one."""
    token = _get(block, "signature" if kind == "thinking" else "data")
    if not isinstance(token, str) or not token:
        return None
    key = _key(kind, token)
    if kind == "redacted_thinking":
        if known is not None and not known(key) and known(thinking := _key("thinking", token)):
            return Block(thinking, _canon("thinking", thinking), "")
        return Block(key, _canon(kind, key), None)
    text = _get(block, "thinking")
    return Block(key, _canon(kind, key), text if isinstance(text, str) else None)


def content_of(message: Any) -> list[Any] | str | None:
    content = _get(message, "content")
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return list(content)
    return None


def _text_item(text: str) -> bytes:
    """A string content is one text block (memoized by the immutable string)."""
    return _TEXTS.get(text, lambda value: _json([{"text": value, "type": "text"}]))


def message_view(message: Any, known: Callable[[bytes], bool] | None = None) -> MessageView:
    """The block model of one request message (``known``: see ``reasoning_block``)."""
    role = str(_get(message, "role") or "")
    head = b"M\x00" + role.encode() + b"\x00"
    content = content_of(message)
    if type(content) is str:
        return MessageView(head, [_text_item(content)])
    if role != "assistant" and not any(_get(b, "type") in REASONING_KINDS for b in content or ()):
        # Reasoning and tool rounds live in assistant turns: the rest is one item (one encode).
        return MessageView(head, [_json([_plain_value(b) for b in content or ()])])
    items: list[bytes | Block] = []
    round_key: str | None = None
    for block in content or ():
        kind = _get(block, "type")
        if kind in REASONING_KINDS:
            found = reasoning_block(block, kind, known)
            if found is not None:
                items.append(found)
                continue
        elif kind in TOOL_CALLS and round_key is None and role == "assistant":
            call_id = _get(block, "id")
            round_key = call_id if isinstance(call_id, str) else None
        items.append(plain_bytes(block))
    return MessageView(head, items, round_key)


def _digest(value: Any) -> bytes:
    return hashlib.sha256(_json(value)).digest()


_NOTHING: Final = _digest(None)
"""The digest of an absent system prompt or tool list (most requests of some applications)."""
_SYSTEMS: BoundedMemo[str, bytes] = BoundedMemo(1024)


def _system_digest(system: Any) -> bytes:
    """A string system prompt is one text block; its digest is memoized by the immutable string."""
    if isinstance(system, str):
        return _SYSTEMS.get(system, lambda text: _digest([{"type": "text", "text": text}] if text else None))
    if isinstance(system, list | tuple):
        return _digest(norm_value(system) or None)
    return _NOTHING


_TOOLS: BoundedMemo[bytes, bytes] = BoundedMemo(1024)


def _tools_digest(tools: Any) -> bytes:
    """Tools given as plain JSON values are memoized by their JSON (the C encoder, much cheaper than
    ``norm_value``): equal JSON normalizes alike. SDK models are read each time."""
    if not isinstance(tools, list | tuple):
        return _NOTHING
    try:
        raw = _json(tools)
    except (TypeError, ValueError):  # not plain JSON values (SDK models, say)
        return _digest(norm_value(tools) or None)
    return _TOOLS.get(raw, lambda _: _digest(norm_value(tools) or None))


def header_of(provider: str, kwargs: Mapping[str, Any]) -> Header:
    model = kwargs.get("model")
    return Header(
        provider,
        str(model) if model is not None else None,
        _system_digest(kwargs.get("system")),
        _tools_digest(kwargs.get("tools")),
    )
