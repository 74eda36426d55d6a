"""OpenAI requests as the continuation rule reads them: pure functions (no call state, no I/O).

A Responses input item in the canonical bytes the rule binds (ids, statuses and the SDK's sentinels left
out), a reasoning item keyed by its encrypted content or id, a Chat Completions message's reasoning keyed
by its text within its execution; the header from the instructions and the tools.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from loom_otel.core import ReasoningPart
from loom_otel.core.vendor import (
    Block,
    Header,
    MessageView,
    Produced,
)
from loom_otel.core.vendor_helpers import (
    BlockRecord,
    ExecutionScope,
    canonical_json,
    digest_of,
    record_digest,
)
from loom_otel.core.vendor_helpers import field as _get

__all__ = [
    "FIELDS",
    "chat_record",
    "header_of",
    "item_key",
    "item_texts",
    "item_view",
    "message_key",
    "produced_item",
    "split_pieces",
]

FIELDS: Final = ("reasoning_content", "reasoning")
_SEPARATOR: Final = "\n\n"


def _key(kind: str, data: object) -> bytes:
    return hashlib.sha256(f"openai/{kind}\x00".encode() + canonical_json(data)).digest()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return "".join(str(_get(p, "text") or "") for p in content)
    return ""


def message_key(field: str, message: Any, scope: ExecutionScope) -> bytes:
    """A Chat Completions assistant message, as the application may send it back (content and calls),
    within one scope: the same message in another execution, tenant or principal is another key."""
    calls = []
    for call in _get(message, "tool_calls") or ():
        function = _get(call, "function")
        calls.append([_get(call, "id"), _get(function, "name"), _get(function, "arguments")])
    owner = [scope.tenant, scope.execution_id, scope.principal]
    return _key(f"chat/{field}", {"c": _text(_get(message, "content")), "t": calls, "s": owner})


def item_key(field: str, item: Any) -> bytes | None:
    """A Responses reasoning item's record key: a digest of its ``encrypted_content`` (``None`` without
    one: an item id is visible, and proves nothing)."""
    token = _get(item, "encrypted_content")
    return _key(f"responses/{field}", token) if isinstance(token, str) and token else None


def chat_record(text: str, part: ReasoningPart | None, keyed: bool, owner: ExecutionScope) -> BlockRecord:
    ref = part.text_ref if part is not None else None
    digest = record_digest(text, part, keyed=keyed)
    return BlockRecord(
        b"", "openai", None, b"", b"", digest, ref, (), owner.execution_id, owner.tenant, owner.principal
    )


def header_of(kwargs: Mapping[str, Any]) -> Header:
    """What binds every reasoning item of a Responses request besides its input items."""
    model = kwargs.get("model")
    instructions = kwargs.get("instructions")
    return Header(
        "openai",
        str(model) if model is not None else None,
        digest_of(canonical_json(_jsonable(instructions))),
        digest_of(canonical_json(_jsonable(kwargs.get("tools")))),
    )


def _jsonable(value: Any) -> Any:
    """A JSON value of what an application passes (dicts, lists, SDK models), ``None`` fields left out."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items() if v is not None and type(v).__name__ not in _SENTINELS}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return _jsonable(dump(mode="json", exclude_none=True))
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if type(value).__name__ in _SENTINELS:  # the SDK's ``omit`` / ``NOT_GIVEN``: not sent
        return None
    return str(value)


_SKIPPED: Final = frozenset({"id", "status"})
_SENTINELS: Final = frozenset({"Omit", "NotGiven"})


def _item_bytes(item: Any) -> bytes:
    """An input (or output) item read the way it is sent back: a message by role and text, a function
    call by id, name and arguments, its output by id and output; anything else as its JSON without its
    ``id`` and ``status``."""
    kind = _get(item, "type")
    if kind == "message" or (kind is None and _get(item, "role") is not None):
        return canonical_json(["m", _get(item, "role"), _text(_get(item, "content"))])
    if kind == "function_call":
        return canonical_json(["f", _get(item, "call_id"), _get(item, "name"), _get(item, "arguments")])
    if kind == "function_call_output":
        return canonical_json(["o", _get(item, "call_id"), _jsonable(_get(item, "output"))])
    value = _jsonable(item)
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in _SKIPPED}
    return canonical_json(["x", value])


def _canon(key: bytes) -> bytes:
    return b"\x01reasoning\x00" + key


def item_view(item: Any, redact: bool) -> MessageView:
    """One input item as the rule's view (every item its own message, with no head)."""
    if _get(item, "type") == "reasoning":
        field, pieces = item_texts(item)
        key = item_key(field, item)
        if key is not None:  # only the vendor's secret makes a block; its text checked in redact mode only
            text = (_SEPARATOR.join(pieces) if any(pieces) else "") if redact else None
            return MessageView(b"", [Block(key, _canon(key), text)])
    return MessageView(b"", [_item_bytes(item)])


def produced_item(item: Any, part: ReasoningPart | None, pieces: list[str], keyed: bool) -> bytes | Produced:
    """A response's output item, for ``Continuation.record``."""
    if _get(item, "type") == "reasoning":
        field, _ = item_texts(item)
        key = item_key(field, item)
        if key is not None:
            text = _SEPARATOR.join(pieces) if any(pieces) else ""
            digest = record_digest(text, part, keyed=keyed)
            ref = part.text_ref if part is not None and digest is not None else None
            split = tuple(len(p) for p in pieces) if digest is not None else ()
            token = str(_get(item, "encrypted_content"))
            return Produced(key, _canon(key), field, token, digest, ref, split)
    return _item_bytes(item)


def item_texts(item: Any) -> tuple[str, list[str]]:
    """Where a reasoning item's readable text is (``content`` or ``summary``) and its pieces."""
    content = [str(_get(c, "text")) for c in _get(item, "content") or () if _get(c, "text") is not None]
    if content:
        return "content", content
    return "summary", [str(_get(s, "text") or "") for s in _get(item, "summary") or ()]


def split_pieces(text: str, sizes: tuple[int, ...]) -> list[str] | None:
    out, at = [], 0
    for size in sizes:
        out.append(text[at : at + size])
        at += size + len(_SEPARATOR)
    return out if at - len(_SEPARATOR) == len(text) else None
