"""The request guard: reasoning read back for audit must never become an instruction.

This module holds the scanner and the rule; each vendor package holds its own field tables and the walk
of its request shape (``instrumentation/.../<vendor>/_guard.py``), calling ``check`` for every part of a
request with whether that part is user data (``allow_fenced``) and whether it is an instruction. A
vendor's check raises ``ReasoningConfigError`` naming the origin and the position (``system[0].text``) when

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
   OpenAI-compatible ``reasoning_content``) sits in a message that is not the assistant's/model's
   (the vendor finds it and raises ``reasoning_block``);
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
from collections.abc import Iterator, Mapping, Sequence
from itertools import compress, repeat
from operator import is_not
from typing import Any, Final, Literal

from loom_otel.core._guard._untrusted import FENCE_OPEN, Untrusted
from loom_otel.core._runtime._shapes import is_mapping
from loom_otel.core.exceptions import ReasoningConfigError

__all__ = ["DATA_ROLES", "Path", "check", "check_rest", "model_fields", "present", "reasoning_block"]

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
DATA_ROLES: Final = frozenset({"user", "tool", "function"})
"""The roles whose messages are user-side data, where the fenced form may appear."""

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


def model_fields(value: object) -> Mapping[str, Any] | None:
    """The field values of an SDK (pydantic) object, without copying; ``None`` for anything else."""
    kind = type(value)
    model = _MODELS.get(kind)
    if model is None:
        model = _MODELS[kind] = hasattr(kind, "model_fields")
    if model:
        fields = getattr(value, "__dict__", None)
        return fields if isinstance(fields, dict) else None
    return None


def present(fields: Mapping[Any, Any]) -> Iterator[tuple[Any, Any]]:
    """The (key, value) pairs of ``fields`` whose value is not ``None``, picked out in C: an SDK object
    holds dozens of unset fields (a ``GenerateContentConfig`` some fifty), and a Python loop over them
    cost more than the rest of a request's check."""
    return compress(fields.items(), map(is_not, fields.values(), repeat(None)))


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
        items = present(value)
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        fields = model_fields(value)
        if fields is None:
            return
        items = present(fields)
    if depth >= _MAX_DEPTH:
        raise _Offense("", "deep")
    for key, item in items:
        if item is None:  # in a list (a mapping's and an SDK object's were left out): nothing to check
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


def check(vendor: str, value: object, path: Path, *, allow_fenced: bool, instruction: bool) -> None:
    """Refuse (``ReasoningConfigError`` naming ``vendor`` and the position under ``path``) an ``Untrusted``
    value anywhere in ``value``, and the fenced form unless ``allow_fenced`` (a user-side part)."""
    try:
        _scan(value, allow_fenced)
    except _Offense as offense:
        offense.path[:0] = path
        raise _refuse(vendor, offense, instruction=instruction) from None


def reasoning_block(vendor: str, kind: str, role: object, path: Path) -> ReasoningConfigError:
    """The refusal of a reasoning block of ``kind`` at ``path`` in a message of ``role`` (not the model's)."""
    return ReasoningConfigError(
        f"{vendor} request refused: a reasoning block ({kind}) at {_position(path)} in a {str(role)!r} message; "
        "reasoning blocks belong only in the assistant's turns"
    )


def check_rest(
    vendor: str,
    kwargs: Mapping[str, Any],
    handled: frozenset[str],
    instruction: frozenset[str],
    path: Sequence[str | int] = (),
) -> None:
    """``check`` every field of ``kwargs`` but the ``handled`` ones (which the vendor walks itself), as
    data that may not hold the fence, an instruction when its key is in ``instruction``."""
    for key, value in kwargs.items():
        if key not in handled:
            check(vendor, value, [*path, key], allow_fenced=False, instruction=key in instruction)
