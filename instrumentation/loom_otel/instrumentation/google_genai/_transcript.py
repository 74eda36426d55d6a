"""Gemini contents read the way the API reads them, as the continuation rule's block model.

Pure functions. Whatever the application holds (SDK objects, dicts in snake_case or camelCase, a
``thoughtSignature`` as bytes or as standard or URL-safe base64) reads the same, so sending a response
back unchanged never counts as an edit.

A model *step* is a run of consecutive ``model`` contents (``send_message_stream`` keeps one content
per chunk); its parts become items in order:

- an ordinary part is its canonical JSON (signature left out);
- a signature is a ``Block`` keyed by the SHA-256 of the decoded bytes, right after its part; a
  function call's signature is never droppable, any other (text, empty text, thought) is;
- a run of consecutive thought parts is one ``Block`` (its text checked against the recorded digest,
  never hashed into the binding), keyed by the signature that follows it in the step (the one the
  vendor signs it with) and its rank among the runs that signature follows. A run no signature
  follows is an ordinary item: nothing vouches for it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from loom_otel.core.vendor import Block, Header, MessageView
from loom_otel.core.vendor_helpers import BoundedMemo, DigestMemo, canonical_json, digest_of, is_mapping, text_of

__all__ = [
    "MODEL_HEAD",
    "SIGNATURE",
    "THOUGHT",
    "Loc",
    "Part",
    "StepItem",
    "call_keys",
    "canonical",
    "config_value",
    "header_of",
    "read_contents",
    "read_part",
    "signature_key",
    "step_items",
    "system_value",
    "thought_key",
    "thought_part",
    "tools_value",
    "views",
]

THOUGHT: Final = "thought"
SIGNATURE: Final = "signature"
MODEL_HEAD: Final = b"M\x00model\x00"
_SIG_KEYS: Final = ("thought_signature", "thoughtSignature")
_TEXT_FIELDS: Final = frozenset({"text", "thought", "thought_signature"})
Loc = tuple[int, int]
"""(content index, part index) in the request as the application passed it."""


def canonical(value: Any) -> bytes:
    """Canonical JSON bytes (sorted keys, no white space; ``text_bytes``: a lone surrogate kept)."""
    return canonical_json(value)


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key).lstrip("_")


_PLAIN_TYPES: Final = frozenset({str, int, float, bool, type(None)})


def _jsonable(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN_TYPES:  # the usual leaf, answered before the abstract-class checks below
        return value
    if kind is dict:
        return {str(k): _jsonable(v) for k, v in value.items() if v is not None}
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if is_mapping(value):
        return {str(k): _jsonable(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return _jsonable(dump(exclude_none=True))
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def decode_signature(value: Any) -> bytes | None:
    """The signature bytes, however they are spelled (bytes, standard or URL-safe base64)."""
    if isinstance(value, bytes | bytearray):
        return bytes(value) or None
    if not isinstance(value, str) or not value:
        return None
    return _DECODED.get(value, _decode_text)


_DECODED: BoundedMemo[str, bytes] = BoundedMemo(4096)
"""Signatures spelled as base64 text (a history kept as dicts), decoded once: one is resent every turn."""


def _decode_text(value: str) -> bytes:
    text = value.strip().replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return value.encode()


def _dump_dict(raw: Mapping[str, Any]) -> dict[str, Any]:
    from google.genai import types

    try:
        dumped: dict[str, Any] = types.Part.model_validate(dict(raw)).model_dump(exclude_none=True)
        return dumped
    except Exception:  # not a shape the SDK validates: read its keys as the API would
        return {_snake(str(k)): v for k, v in raw.items() if v is not None}


@dataclass(slots=True)
class Part:
    """One part as the API reads it (the text and signature are kept apart from the rest)."""

    loc: Loc
    plain: bytes
    thought: bool
    text: str | None
    signature: bytes | None
    call: Mapping[str, Any] | None
    empty: bool
    """An empty text part (a signature carrier): it goes with its signature."""
    restored: bool = False


_THOUGHT_PLAIN: Final = canonical({"thought": True})


def read_part(raw: Any, loc: Loc) -> Part:
    if isinstance(raw, str):
        return Part(loc, canonical({"text": raw}), False, raw, None, None, not raw)
    if is_mapping(raw):
        key = _dict_key(raw)
        if key is None:
            return Part(loc, *_read_dict(raw))
        return Part(loc, *_DICT_PARTS.get(key, lambda _: _read_dict(raw)))
    fields = getattr(raw, "model_fields_set", None)
    if fields is not None and fields <= _TEXT_FIELDS:
        # The hot path (a text or thought part, maybe signed): what model_dump would give, read off the
        # set fields without pydantic's serializer (the other fields are unset, so ``None``).
        text, thought, signature = raw.text, raw.thought, raw.thought_signature
        if thought is True and signature is None:
            # an unsigned (streamed) thought piece: its plain form is always the same
            return Part(loc, _THOUGHT_PLAIN, True, text if isinstance(text, str) else None, None, None, False)
        key = (text, thought, signature)
        if (
            (text is None or (type(text) is str and len(text) <= _MEMO_TEXT))
            and (thought is None or type(thought) is bool)
            and (signature is None or type(signature) is bytes)
        ):
            return Part(loc, *_TEXT_PARTS.get(key, _read_text))
        return Part(loc, *_read_text(key))
    dump = getattr(raw, "model_dump", None)
    data = dump(exclude_none=True) if dump is not None else {"value": _jsonable(raw)}
    return Part(loc, *_read(data, decode_signature(data.pop("thought_signature", None))))


_Read = tuple[bytes, bool, str | None, bytes | None, Mapping[str, Any] | None, bool]
"""A ``Part``'s fields after its location: plain, thought, text, signature, call, empty."""

_MEMO_TEXT: Final = 8192
"""The longest text (in characters) a read part is remembered with: the memos below stay within a few
tens of megabytes however long the texts are."""
_TEXT_PARTS: BoundedMemo[tuple[Any, Any, Any], _Read] = BoundedMemo(2048)
"""Text and thought parts by (text, thought, signature) when these are a ``str`` (up to ``_MEMO_TEXT``
characters), a ``bool`` and ``bytes`` (or ``None``): a conversation resends its history every turn, the
same strings, whose hash Python keeps. Anything else is read each time."""


_DICT_PARTS: BoundedMemo[tuple[Any, ...], _Read] = BoundedMemo(2048)
"""Parts given as dicts, by ``_dict_key``: validating one with the SDK costs more than anything else in
reading it, and a conversation kept as dicts resends the same ones every turn."""
_MEMO_NODES: Final = 256


class _Unkeyed(Exception):
    """A value ``_frozen`` cannot key."""


def _dict_key(raw: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """A hashable key equal only for dict parts of equal JSON-like values: a ``dict`` whose values are
    ``dict`` (string keys), ``list``, ``tuple``, ``str``, ``bytes``, ``int``, ``float``, ``bool`` or
    ``None`` (exactly these types), up to ``_MEMO_NODES`` values and ``_MEMO_TEXT`` characters; else
    ``None`` (the part is read each time)."""
    if type(raw) is not dict:
        return None
    budget = [_MEMO_TEXT, _MEMO_NODES]
    try:
        key: tuple[Any, ...] = _frozen(raw, budget)
    except _Unkeyed:
        return None
    return key


def _frozen(value: Any, budget: list[int]) -> Any:
    """``value`` as nested tuples tagged by type, so that ``1``, ``1.0`` and ``True`` (and ``0.0`` and
    ``-0.0``, a float is keyed by its ``repr``) never key alike; ``budget`` is [characters, values] left."""
    budget[1] -= 1
    if budget[1] < 0:
        raise _Unkeyed
    kind = type(value)
    if kind is str or kind is bytes:
        budget[0] -= len(value)
        if budget[0] < 0:
            raise _Unkeyed
        return value
    if value is None:
        return None
    if kind is dict:
        if any(type(k) is not str for k in value):
            raise _Unkeyed
        return (dict, tuple((k, _frozen(v, budget)) for k, v in value.items()))
    if kind is list or kind is tuple:
        return (kind, tuple(_frozen(v, budget) for v in value))
    if kind is bool or kind is int:
        return (kind, value)
    if kind is float:
        return (kind, repr(value))
    raise _Unkeyed


def _read_dict(raw: Mapping[str, Any]) -> _Read:
    data = {k: v for k, v in raw.items() if k not in _SIG_KEYS}
    signature = decode_signature(next((raw[k] for k in _SIG_KEYS if raw.get(k) is not None), None))
    return _read(_dump_dict(data), signature)


def _read_text(key: tuple[Any, Any, Any]) -> _Read:
    text, thought, signature = key
    data = {k: v for k, v in (("text", text), ("thought", thought)) if v is not None}
    return _read(data, decode_signature(signature))


def _read(data: dict[str, Any], signature: bytes | None) -> _Read:
    """A part's fields from its dumped form without the signature (``data`` is consumed)."""
    thought = bool(data.get("thought"))
    text = data.get("text")
    text = text if isinstance(text, str) else None
    if thought:
        data.pop("text", None)
    call = data.get("function_call")
    empty = text == "" and set(data) <= {"text"}
    return canonical(_jsonable(data)), thought, text, signature, call if is_mapping(call) else None, empty


def _role_and_parts(content: Any) -> tuple[str, list[Any]] | None:
    if is_mapping(content):
        if "parts" not in content and "role" not in content:
            return None
        role, parts = content.get("role"), content.get("parts")
    elif hasattr(content, "parts") and hasattr(content, "role"):
        role, parts = content.role, content.parts
    else:
        return None
    return str(role or "user"), list(parts or ())


def read_contents(contents: Any) -> list[tuple[str, list[Part]]] | None:
    """Each content as (role, parts); ``None`` when ``contents`` is not a list of contents (a bare
    string, parts): such a request holds no earlier model turn, so there is nothing to decide."""
    if not isinstance(contents, list | tuple):
        contents = [contents]
    out: list[tuple[str, list[Part]]] = []
    for c, content in enumerate(contents):
        found = _role_and_parts(content)
        if found is None:
            return None
        role, parts = found
        out.append((role, [read_part(raw, (c, p)) for p, raw in enumerate(parts)]))
    return out


@dataclass(slots=True)
class StepItem:
    item: bytes | Block
    parts: list[Part]
    kind: str = ""
    signature: bytes | None = None


_KEYS: dict[tuple[str, int], DigestMemo] = {}
"""Per kind and rank, sized for the signatures of a few long conversations (a signature may be kilobytes)."""
_MEMO_RANKS: Final = 8
"""Ranks memoized (a signature is followed by this many thought runs at most, in practice)."""


def _key(kind: str, signature: bytes, rank: int = 0) -> bytes:
    """The record key of a signature (memoized: a conversation resends the same signatures every turn)."""
    keys = _KEYS.get((kind, rank))
    if keys is None:
        keys = DigestMemo(f"gemini/{kind}\x00{rank}\x00".encode(), 2048)
        if rank < _MEMO_RANKS:
            _KEYS[(kind, rank)] = keys
    return keys(signature)


def signature_key(signature: bytes) -> bytes:
    """The record key of a signature on a part (a function call's, say)."""
    return _key(SIGNATURE, signature)


def thought_key(signature: bytes) -> bytes:
    """The record key of the (first) thought run a signature follows."""
    return _key(THOUGHT, signature)


def thought_part(loc: Loc, text: str) -> Part:
    """A thought part put back into a request (``loc``'s part index is negative: it was not sent)."""
    return Part(loc, _THOUGHT_PLAIN, True, text, None, None, False, restored=True)


def _canon(kind: str, key: bytes) -> bytes:
    return b"\x01" + kind.encode() + b"\x00" + key


def signature_block(part: Part) -> StepItem:
    assert part.signature is not None
    key = _key(SIGNATURE, part.signature)
    block = Block(key, _canon(SIGNATURE, key), None, droppable=part.call is None, held=not part.restored)
    return StepItem(block, [part], SIGNATURE, part.signature)


def step_items(parts: Sequence[Part]) -> list[StepItem]:
    """The items of one model step, in order (see the module docstring)."""
    following: list[bytes | None] = [None] * (len(parts) + 1)
    for k in range(len(parts) - 1, -1, -1):
        following[k] = parts[k].signature or following[k + 1]
    ranks: dict[bytes, int] = {}
    items: list[StepItem] = []
    k = 0
    while k < len(parts):
        part = parts[k]
        if not part.thought:
            items.append(StepItem(part.plain, [part]))
            if part.signature is not None:
                items.append(signature_block(part))
            k += 1
            continue
        end = k
        while end < len(parts) and parts[end].thought:
            end += 1
        run = list(parts[k:end])
        signature = following[k]
        if signature is None:
            items.append(StepItem(canonical([text_of(p.plain) for p in run]), run))
        else:
            rank = ranks.get(signature, 0)
            ranks[signature] = rank + 1
            key = _key(THOUGHT, signature, rank)
            text = "".join(p.text or "" for p in run)
            items.append(StepItem(Block(key, _canon(THOUGHT, key), text), run, THOUGHT, signature))
        items.extend(signature_block(p) for p in run if p.signature is not None)
        k = end
    return items


def views(contents: list[tuple[str, list[Part]]]) -> tuple[list[MessageView], list[list[StepItem]]]:
    """One view per content, except that consecutive model contents are one step (one view)."""
    out: list[MessageView] = []
    layout: list[list[StepItem]] = []
    c = 0
    while c < len(contents):
        role, parts = contents[c]
        if role != "model":
            out.append(MessageView(b"M\x00" + role.encode() + b"\x00", [canonical([text_of(p.plain) for p in parts])]))
            layout.append([StepItem(b"", list(parts))])
            c += 1
            continue
        step: list[Part] = []
        while c < len(contents) and contents[c][0] == "model":
            step.extend(contents[c][1])
            c += 1
        items = step_items(step)
        out.append(MessageView(MODEL_HEAD, [s.item for s in items]))
        layout.append(items)
    return out, layout


def call_keys(call: Mapping[str, Any], rank: int) -> list[str]:
    """How a function call is found again: its id, else its name, canonical arguments and rank in
    its step."""
    keys = []
    call_id = call.get("id")
    if isinstance(call_id, str) and call_id:
        keys.append("id\x00" + call_id)
    args = canonical(_jsonable(call.get("args") or {})).decode()
    keys.append(f"call\x00{call.get('name')}\x00{args}\x00{rank}")
    return keys


def config_value(config: Any, name: str) -> Any:
    if is_mapping(config):
        value = config.get(name)
        if value is None:
            head, *rest = name.split("_")
            value = config.get(head + "".join(w.title() for w in rest))
        return value
    return getattr(config, name, None)


def system_value(system: Any) -> Any:
    """A system instruction (string, part, content, list of parts) as canonical JSON-able parts."""
    if system is None:
        return None
    found = _role_and_parts(system)
    raws = found[1] if found is not None else system if isinstance(system, list | tuple) else [system]
    parts = [json.loads(read_part(raw, (0, p)).plain) for p, raw in enumerate(raws)]
    return parts or None


def _tool(tool: Any) -> Any:
    if callable(tool) and not hasattr(tool, "model_dump"):
        return {"callable": f"{getattr(tool, '__module__', '')}.{getattr(tool, '__qualname__', '')}"}
    if is_mapping(tool):
        from google.genai import types

        try:
            return _jsonable(types.Tool.model_validate(dict(tool)))
        except Exception:  # not a shape the SDK validates: as given
            return _jsonable(tool)
    return _jsonable(tool)


def tools_value(tools: Any) -> Any:
    if not isinstance(tools, list | tuple) or not tools:
        return None
    return [_tool(t) for t in tools]


_NOTHING: Final = digest_of(canonical(None))
"""The digest of an absent system instruction or tool list."""


def _digest(value: Any) -> bytes:
    return _NOTHING if value is None else digest_of(canonical(value))


_MEMO_SIZE: Final = 1024
_SYSTEMS: BoundedMemo[str, bytes] = BoundedMemo(_MEMO_SIZE)
_TOOLS: BoundedMemo[tuple[tuple[str, str], ...], bytes] = BoundedMemo(_MEMO_SIZE)


def _system_digest(system: Any) -> bytes:
    """A string system instruction's digest is memoized by the immutable string."""
    if type(system) is not str:
        return _digest(system_value(system))
    return _SYSTEMS.get(system, lambda text: _digest(system_value(text)))


def _tools_digest(tools: Any) -> bytes:
    """Tools given as SDK models are memoized by their JSON dump without the unset (``None``) fields
    (pydantic's own serializer, much cheaper than canonicalizing them; the digest leaves those fields out
    too): equal dumps of the same types canonicalize alike. Others are read each time."""
    key = _tools_key(tools)
    if key is None:
        return _digest(tools_value(tools))
    return _TOOLS.get(key, lambda _: _digest(tools_value(tools)))


def _tools_key(tools: Any) -> tuple[tuple[str, str], ...] | None:
    if not isinstance(tools, list | tuple):
        return None
    key = []
    for tool in tools:
        dump = getattr(tool, "model_dump_json", None)
        if dump is None:
            return None
        try:
            dumped = dump(exclude_none=True)
        except Exception:  # a value pydantic cannot serialize: read it the long way
            return None
        kind = type(tool)
        key.append((f"{kind.__module__}.{kind.__qualname__}", dumped))
    return tuple(key)


def header_of(provider: str, kwargs: dict[str, Any]) -> Header:
    config = kwargs.get("config")
    system = _system_digest(config_value(config, "system_instruction"))
    return Header(provider, None, system, _tools_digest(config_value(config, "tools")))
