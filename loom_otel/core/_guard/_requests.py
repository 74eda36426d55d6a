"""The request guard: reasoning read back for audit must never become an instruction.

The wrappers call one function per request shape before the SDK serializes the request:

- ``check_anthropic_request(kwargs)``: ``messages.create`` / ``stream`` keyword arguments;
- ``check_anthropic_batch_request(kwargs)``: ``messages.batches.create``, each ``requests[i].params``
  checked as a ``messages.create`` request (positions ``requests[3].params.system[0].text``);
- ``check_gemini_request(contents, config)``: ``models.generate_content`` (and ``_stream``);
- ``check_openai_chat_request(kwargs)``: ``chat.completions.create``;
- ``check_openai_responses_request(kwargs)``: ``responses.create``.

Each raises ``ReasoningConfigError`` naming the origin and the position (``system[0].text``) when

1. an ``Untrusted`` value appears anywhere (in an instruction position: refused as such; elsewhere
   the SDK could not serialize it anyway; the remedy is ``Untrusted.fenced()`` inside a user message);
2. the fenced form (``<untrusted-model-output origin=...>``) appears anywhere but in the content of a
   user message (or a tool result, which the vendors carry as user-side data): a system prompt,
   developer message, instructions, a tool or schema description, an assistant turn, a config field.
   A string counts as fenced when it holds the fence's tag name, ``untrusted-model-output``, after
   normalisation (HTML entities unescaped, NFKC, invisible format characters removed, case folded):
   so the opening marker without its ``<``, the closing marker alone (a fence whose header line was
   cut off), an upper-cased or HTML-escaped fence are all refused, and the word "untrusted" is not;
3. a reasoning block (Anthropic ``thinking`` / ``redacted_thinking``, a Gemini ``thought`` part, an
   OpenAI-compatible ``reasoning_content``) sits in a message that is not the assistant's/model's;
4. the request nests deeper than ``_MAX_DEPTH`` (48) levels, where the walk stops: refused rather
   than passed unchecked.

The scan is a single walk over the request as given (dicts, lists, SDK pydantic objects) without
copies of the structure. An ASCII string with no ``&`` (nearly all of them) costs one lower-casing
and one substring search; only the others are normalised. The messages name positions and
origins, never text.

The guard is a safety net against mistakes, not a sandbox. It recognises ``Untrusted`` values and
the fence in the forms above; reasoning text taken out deliberately (``Untrusted.text``), re-encoded
(URL or base64 encoding, a translation, a paraphrase) or stripped of both fence markers is plain
text to it and goes through. Keeping model output out of instructions remains the application's
design; the guard catches the slip.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from loom_otel.core._guard._untrusted import FENCE_OPEN, Untrusted
from loom_otel.core._shapes import field as _get
from loom_otel.core._shapes import is_mapping
from loom_otel.core.exceptions import ReasoningConfigError

__all__ = [
    "check_anthropic_batch_request",
    "check_anthropic_request",
    "check_gemini_request",
    "check_openai_chat_request",
    "check_openai_responses_request",
]

_TAG: Final = FENCE_OPEN[1 : FENCE_OPEN.index(" ")]
"""``untrusted-model-output``: both the opening and the closing marker hold it."""
_ORIGIN: Final = re.compile(re.escape(_TAG) + r"\s+origin=([^>\s]{0,200})")
_INVISIBLE: Final = ("\u00ad", "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff")
"""Invisible format characters that could split the tag unseen (soft hyphen, zero-width ones, marks)."""
_HYPHENS: Final = ("-", "\uff0d", "\ufe63")
"""What NFKC makes a ``-``: a string with none of them and no ``&`` cannot hold the tag."""
_HINGES: Final = ("l-o", "L-o", "l-O", "L-O")
"""The tag's ``l-o`` in every case (searching four is cheaper than lower-casing a non-ASCII string)."""
_UNESCAPES: Final = 3
"""Rounds of HTML unescaping (``&amp;lt;`` was escaped twice)."""
_MAX_DEPTH: Final = 48
_SCALARS: Final = (int, float, bool, bytes, bytearray, type(None))
_LEAVES: Final = frozenset(_SCALARS)
_DATA_ROLES: Final = frozenset({"user", "tool", "function"})
_ANTHROPIC_REASONING: Final = frozenset({"thinking", "redacted_thinking"})

Path = list[str | int]


class _Offense(Exception):
    """Found while walking; turned into a ``ReasoningConfigError`` once the position is known."""

    def __init__(self, origin: str, kind: Literal["untrusted", "fenced", "deep"]) -> None:
        super().__init__(origin)
        self.origin = origin
        self.kind = kind
        self.path: Path = []


def _fence_in(text: str) -> str | None:
    """The fence's origin (``"unknown"`` when only a marker is left) if ``text`` holds the fence, in
    any of the forms the module docstring lists; ``None`` otherwise.

    The pre-filter keeps the usual string cheap: without a hyphen (or an ``&``) there is no tag, and
    an ASCII string needs only lower-casing (one copy at C speed); another one is normalised only
    when it holds the tag's ``l-o`` in some case or normalising would change it."""
    if "&" in text:
        folded = _normalised(text)
    elif text.isascii():
        if "-" not in text:
            return None
        folded = text.lower()
    elif not any(hyphen in text for hyphen in _HYPHENS):
        return None
    elif any(hinge in text for hinge in _HINGES):
        folded = _normalised(text)
    elif not any(invisible in text for invisible in _INVISIBLE) and unicodedata.is_normalized("NFKC", text):
        return None  # normalising changes nothing, and the tag's "l-o" is absent in every case
    else:
        folded = _normalised(text)
    if _TAG not in folded:
        return None
    match = _ORIGIN.search(folded)
    return match.group(1) if match else "unknown"


def _normalised(text: str) -> str:
    """HTML entities unescaped, compatibility forms (fullwidth) made plain, invisibles removed, case folded."""
    for _ in range(_UNESCAPES):
        if "&" not in text:
            break
        text = html.unescape(text)
    text = unicodedata.normalize("NFKC", text)
    for invisible in _INVISIBLE:
        if invisible in text:
            text = text.replace(invisible, "")
    return text.casefold()


_MODELS: dict[type, bool] = {}
"""Whether a type is an SDK (pydantic) model, per type (as ``is_mapping`` keeps its answers)."""


def _fields(value: object) -> Mapping[str, Any] | None:
    """The field values of an SDK (pydantic) object, without copying; ``None`` for anything else."""
    kind = type(value)
    model = _MODELS.get(kind)
    if model is None:
        model = _MODELS[kind] = hasattr(kind, "model_fields")
    if model:
        fields = getattr(value, "__dict__", None)
        return fields if isinstance(fields, dict) else None
    return None


def _scan(value: object, allow_fenced: bool, depth: int = 0) -> None:
    """Raise ``_Offense`` (with its path) for an ``Untrusted`` value, or a fenced string if not allowed."""
    kind = type(value)
    if kind in _LEAVES:  # the usual leaf, answered before the isinstance checks below
        return
    if isinstance(value, str):
        if not allow_fenced:
            origin = _fence_in(value)
            if origin is not None:
                raise _Offense(origin, "fenced")
        return
    if isinstance(value, _SCALARS):
        return
    if isinstance(value, Untrusted):
        raise _Offense(value.origin, "untrusted")
    items: Any
    if is_mapping(value):
        items = value.items()  # type: ignore[attr-defined]
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        fields = _fields(value)
        if fields is None:
            return
        items = fields.items()
    if depth >= _MAX_DEPTH:
        raise _Offense("", "deep")
    for key, item in items:
        if item is None:  # most of an SDK object's fields: nothing to check
            continue
        try:
            _scan(item, allow_fenced, depth + 1)
        except _Offense as offense:
            offense.path.insert(0, key if isinstance(key, int) else str(key))
            raise


def _position(path: Path) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
    return out


def _refuse(vendor: str, offense: _Offense, *, instruction: bool) -> ReasoningConfigError:
    where = _position(offense.path)
    if offense.kind == "deep":
        return ReasoningConfigError(
            f"{vendor} request refused: it nests deeper than {_MAX_DEPTH} levels at {where}, "
            "beyond what the request guard checks"
        )
    if offense.kind == "fenced":
        return ReasoningConfigError(
            f"{vendor} request refused: fenced untrusted model output (origin {offense.origin!r}) at {where}; "
            "the fenced form is allowed only inside a user message"
            + (", never in an instruction position" if instruction else "")
        )
    if instruction:
        return ReasoningConfigError(
            f"{vendor} request refused: Untrusted text (origin {offense.origin!r}) in an instruction position "
            f"({where}); reasoning read back for audit must never become an instruction"
        )
    return ReasoningConfigError(
        f"{vendor} request refused: an Untrusted value (origin {offense.origin!r}) at {where} cannot be sent; "
        "pass Untrusted.fenced() inside a user message instead"
    )


def _check(vendor: str, value: object, path: Path, *, allow_fenced: bool, instruction: bool) -> None:
    try:
        _scan(value, allow_fenced)
    except _Offense as offense:
        offense.path[:0] = path
        raise _refuse(vendor, offense, instruction=instruction) from None


def _reasoning_block(vendor: str, kind: str, role: object, path: Path) -> ReasoningConfigError:
    return ReasoningConfigError(
        f"{vendor} request refused: a reasoning block ({kind}) at {_position(path)} in a {str(role)!r} message; "
        "reasoning blocks belong only in the assistant's turns"
    )


def _check_rest(
    vendor: str,
    kwargs: Mapping[str, Any],
    handled: frozenset[str],
    instruction: frozenset[str],
    path: Sequence[str | int] = (),
) -> None:
    for key, value in kwargs.items():
        if key not in handled:
            _check(vendor, value, [*path, key], allow_fenced=False, instruction=key in instruction)


# -- Anthropic ------------------------------------------------------------------------------------

_ANTHROPIC: Final = "Anthropic"
_ANTHROPIC_HANDLED: Final = frozenset({"messages"})
_ANTHROPIC_INSTRUCTIONS: Final = frozenset({"system", "tools", "tool_choice", "output_format", "mcp_servers"})


def check_anthropic_request(kwargs: Mapping[str, Any]) -> None:
    """Check ``messages.create`` keyword arguments (``system``, ``tools``, ``messages``, ...)."""
    _check_anthropic(_ANTHROPIC, kwargs, [])


def _check_anthropic(vendor: str, kwargs: Mapping[str, Any], path: Path) -> None:
    _check_rest(vendor, kwargs, _ANTHROPIC_HANDLED, _ANTHROPIC_INSTRUCTIONS, path)
    for i, message in enumerate(kwargs.get("messages") or ()):
        role = _get(message, "role")
        user = role == "user"
        content = _get(message, "content")
        if isinstance(content, (list, tuple)) and role != "assistant":
            for j, block in enumerate(content):
                kind = _get(block, "type")
                if kind in _ANTHROPIC_REASONING:
                    raise _reasoning_block(vendor, str(kind), role, [*path, "messages", i, "content", j])
        _check(vendor, message, [*path, "messages", i], allow_fenced=user, instruction=False)


_ANTHROPIC_BATCH: Final = "Anthropic batch"


def check_anthropic_batch_request(kwargs: Mapping[str, Any]) -> None:
    """Check ``messages.batches.create`` keyword arguments: every ``requests[i].params`` as a
    ``messages.create`` request, every other field (``custom_id``, headers) as data that may not
    hold the fence. ``requests`` must be a list or tuple (the caller materialises a one-shot iterable
    before checking, or the check would consume what the SDK is to send)."""
    _check_rest(_ANTHROPIC_BATCH, kwargs, frozenset({"requests"}), frozenset())
    requests = kwargs.get("requests") or ()
    if not isinstance(requests, (list, tuple)):
        _check(_ANTHROPIC_BATCH, requests, ["requests"], allow_fenced=False, instruction=False)
        return
    for i, request in enumerate(requests):
        params = _get(request, "params")
        fields = request if is_mapping(request) else _fields(request)
        if fields is None or params is None:
            _check(_ANTHROPIC_BATCH, request, ["requests", i], allow_fenced=False, instruction=False)
            continue
        _check_rest(_ANTHROPIC_BATCH, fields, frozenset({"params"}), frozenset(), ["requests", i])
        params_fields = params if is_mapping(params) else _fields(params)
        if params_fields is not None:
            _check_anthropic(_ANTHROPIC_BATCH, params_fields, ["requests", i, "params"])
        else:
            _check(_ANTHROPIC_BATCH, params, ["requests", i, "params"], allow_fenced=False, instruction=True)


# -- Google GenAI ---------------------------------------------------------------------------------

_GEMINI: Final = "Google GenAI"


def _is_content(value: object) -> bool:
    """A ``Content`` (or its dict form), as opposed to a bare ``Part`` or string the SDK makes a user turn."""
    if isinstance(value, Mapping):
        return "parts" in value or "role" in value
    return hasattr(value, "parts") and hasattr(value, "role")


def _gemini_contents(contents: object, path: Path) -> None:
    """Fenced text only in user contents; ``Untrusted`` nowhere; thought parts only in model contents."""
    if isinstance(contents, (list, tuple)):
        for i, item in enumerate(contents):
            _gemini_contents(item, [*path, i])
        return
    if _is_content(contents):
        role = _get(contents, "role") or "user"
        if role != "model":
            for j, part in enumerate(_get(contents, "parts") or ()):
                if _get(part, "thought") is True:
                    raise _reasoning_block(_GEMINI, "thought", role, [*path, "parts", j])
    else:
        role = "user"
        if _get(contents, "thought") is True:
            raise _reasoning_block(_GEMINI, "thought", role, path)
    _check(_GEMINI, contents, path, allow_fenced=role in _DATA_ROLES, instruction=False)


_GEMINI_INSTRUCTIONS: Final = frozenset({"system_instruction", "tools", "tool_config", "response_schema"})


def check_gemini_request(contents: object, config: object = None) -> None:
    """Check ``generate_content(contents=..., config=...)``: ``contents`` may be a string, a ``Part``, a
    ``Content``, a dict, or a list of them; ``config`` a ``GenerateContentConfig`` or a dict."""
    _gemini_contents(contents, ["contents"])
    if config is None:
        return
    fields = config if isinstance(config, Mapping) else _fields(config)
    if fields is None:
        _check(_GEMINI, config, ["config"], allow_fenced=False, instruction=True)
        return
    for key, value in fields.items():
        if value is not None:
            _check(_GEMINI, value, ["config", key], allow_fenced=False, instruction=key in _GEMINI_INSTRUCTIONS)


# -- OpenAI ---------------------------------------------------------------------------------------

_OPENAI_CHAT: Final = "OpenAI chat"
_OPENAI_RESPONSES: Final = "OpenAI responses"
_INSTRUCTION_ROLES: Final = frozenset({"system", "developer"})


def _openai_messages(vendor: str, messages: object, path: Path) -> None:
    if not isinstance(messages, (list, tuple)):
        _check(vendor, messages, path, allow_fenced=True, instruction=False)  # a plain user input
        return
    for i, message in enumerate(messages):
        role = _get(message, "role")
        if role is not None and role != "assistant" and _get(message, "reasoning_content"):
            raise _reasoning_block(vendor, "reasoning_content", role, [*path, i, "reasoning_content"])
        if role is None:  # a Responses item: function_call_output is tool data; others are the model's
            data = _get(message, "type") in ("function_call_output", "custom_tool_call_output")
            _check(vendor, message, [*path, i], allow_fenced=data, instruction=False)
            continue
        instruction = role in _INSTRUCTION_ROLES
        _check(vendor, message, [*path, i], allow_fenced=role in _DATA_ROLES, instruction=instruction)


_CHAT_INSTRUCTIONS: Final = frozenset({"tools", "functions", "tool_choice", "response_format", "prediction"})


def check_openai_chat_request(kwargs: Mapping[str, Any]) -> None:
    """Check ``chat.completions.create`` keyword arguments (system/developer messages, tool descriptions)."""
    _check_rest(_OPENAI_CHAT, kwargs, frozenset({"messages"}), _CHAT_INSTRUCTIONS)
    _openai_messages(_OPENAI_CHAT, kwargs.get("messages") or (), ["messages"])


_RESPONSES_INSTRUCTIONS: Final = frozenset({"instructions", "tools", "tool_choice", "text", "prompt"})


def check_openai_responses_request(kwargs: Mapping[str, Any]) -> None:
    """Check ``responses.create`` keyword arguments (``instructions``, ``input`` items, tools, prompt)."""
    _check_rest(_OPENAI_RESPONSES, kwargs, frozenset({"input"}), _RESPONSES_INSTRUCTIONS)
    _openai_messages(_OPENAI_RESPONSES, kwargs.get("input") or (), ["input"])
