"""Scrubbing values: one string, an attribute map, and the window pass over all a record's texts.

Three rules, the first two per value (``scrub_value``, ``scrub_attributes``), the last over every text
of a record at once (``scrub_texts``):

- an exact value (a text or signature remembered, ``_registry``), and the short secrets of the value's
  trace searched inside it;
- reasoning shapes in JSON values (``_shapes``) and in OpenInference's flattened ``message_content``
  attributes, and attributes named for a signature;
- runs of remembered secrets (``_windows``) in the texts of a record read as one text, in order: a
  secret split over several values (stream deltas, one per event or attribute) is found as one run.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from loom_otel.core._scrub._registry import registry
from loom_otel.core._scrub._shapes import is_marker, may_hold_reasoning, replacement, scrub_json, walk
from loom_otel.core._scrub._windows import SkeletonMap, skeleton

__all__ = ["Text", "scrub_any", "scrub_attributes", "scrub_texts", "scrub_value"]

Text = str | bytes
_MIN_VALUE: Final = 8
_MAX_DEPTH: Final = 2
"""Base64 inside base64 is decoded this many times at most."""
_MAX_PASSES: Final = 4
_BASE64: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
_FLAT_TYPE: Final = ".message_content.type"
_FLAT_FIELDS: Final = ("text", "signature", "data")
_MARKED: Final = b"[loom-otel reasoning "
_MARKER: Final = re.compile(
    rb"\[loom-otel reasoning (?:text|signature) ref=[0-9a-f]{32}/[0-9a-f]{64} digest=[0-9a-f]{64} size=[0-9]+\]"
)
"""The markers that replace a captured text or signature (``_registry.marker``): a blob's address and a
SHA-256, hex only (a reasoning text or a base64 signature does not fit in one)."""
_SECRET_NAMES: Final = frozenset(
    {"signature", "reasoning_signature", "thought_signature", "thoughtSignature", "encrypted_content"}
)
"""Attribute (last segment) and JSON key names that only ever hold a reasoning signature."""


def _by_rules(value: str, trace_id: int | None) -> str:
    """``value`` by the per-value rules (exact values, short secrets of its trace, JSON shapes)."""
    if len(value) < _MIN_VALUE:
        return value
    exact = registry.get(value)
    if exact is not None:
        return exact
    head = value[:1]
    if head.isspace():  # a copy of the value only when it starts with white space
        head = value.lstrip()[:1]
    if head in ("{", "[") and may_hold_reasoning(value):
        value = scrub_json(value)
    for needle, found in registry.needles(trace_id, len(value)):
        if needle in value:
            value = value.replace(needle, found)
    return value


def scrub_value(value: str, trace_id: int | None = None) -> str:
    """One string with every reasoning text and signature replaced (all the module rules)."""
    value = _by_rules(value, trace_id)
    scrubbed = scrub_texts([value])
    return value if scrubbed is None else str(scrubbed[0])


def scrub_any(value: Any, trace_id: int | None) -> Any:
    """A copy of an attribute value or log body by the per-value rules: strings, sequences, and the
    nested maps and lists log records may hold (their reasoning shapes included); ``value`` itself when
    nothing changes."""
    kind = type(value)
    if kind is int or kind is bool or kind is float:  # most of a span's values: nothing to look at
        return value
    if isinstance(value, str):
        return _by_rules(value, trace_id)
    if isinstance(value, Mapping):
        tree = {key: scrub_any(item, trace_id) for key, item in value.items()}
        walk(tree)
        return value if tree == value else tree
    if isinstance(value, tuple | list) and value:
        items = [scrub_any(item, trace_id) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return tuple(items) if isinstance(value, tuple) else items
    return value


def scrub_attributes(attributes: Mapping[str, Any], trace_id: int | None = None) -> dict[str, Any] | None:
    """The changed entries of ``attributes`` by the per-value rules, or ``None`` when nothing changes."""
    changed: dict[str, Any] = {}
    for key, value in attributes.items():
        new = scrub_any(value, trace_id)
        if new is not value and new != value:
            changed[key] = new
    for key, value in attributes.items():
        if isinstance(value, str) and value and key.rpartition(".")[2] in _SECRET_NAMES and not is_marker(value):
            changed[key] = replacement(changed.get(key, value))
        elif key.endswith(_FLAT_TYPE) and value in ("reasoning", "thinking"):
            prefix = key[: -len("type")]
            for name in _FLAT_FIELDS:
                flat = prefix + name
                current = changed.get(flat, attributes.get(flat))
                if isinstance(current, str) and current and not is_marker(current):
                    changed[flat] = replacement(current)
    return changed or None


def _blank(match: re.Match[bytes]) -> bytes:
    """As many spaces as a marker has bytes (the places of everything around it stay where they are)."""
    return b" " * (match.end() - match.start())


def _encode(text: Text) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")


def scrub_texts(texts: Sequence[Text], depth: int = 0) -> list[Text] | None:
    """``texts`` (in the order a reader sees them) with every run of a remembered secret replaced, the
    texts read as one (a run may cross from one into the next); ``None`` when none holds a run. A run
    in base64 is replaced in the decoded text, which is encoded again."""
    if not registry.has_windows():
        return None
    result: list[Text] | None = None
    for _ in range(_MAX_PASSES):  # a secret written twice: a pass finds each window's last place
        scrubbed = _pass(result or texts, depth)
        if scrubbed is None:
            break
        result = scrubbed
    return result


def _pass(texts: Sequence[Text], depth: int) -> list[Text] | None:
    data = [_encode(text) for text in texts]
    joined = b"".join(data)
    if _MARKED in joined:  # loom-otel's own markers hold no secret: blanked, they are not searched
        joined = _MARKER.sub(_blank, joined)
    skel = skeleton(joined)
    windows, shared = registry.windows.shared(skel)
    if not shared:
        return None
    runs = registry.windows.runs(skel, windows, shared)
    while runs and registry.resolve({run[4] for run in runs}):  # what their calls showed is left out now
        windows, shared = registry.windows.shared(skel)
        runs = registry.windows.runs(skel, windows, shared) if shared else []
    if not runs:
        return None
    places = SkeletonMap(joined)
    starts = [0]
    for piece in data:
        starts.append(starts[-1] + len(piece))
    edits: list[dict[tuple[int, int], bytes]] = [{} for _ in data]
    for first, last, found, encoded, _ in runs:
        begin, end = places.span(first, last)
        for index in range(len(data)):
            low, high = max(begin, starts[index]), min(end, starts[index + 1])
            if low >= high:
                continue
            low, high = low - starts[index], high - starts[index]
            decoded = _decoded_run(data[index], low, high, depth) if encoded else None
            if decoded is not None:
                edits[index][decoded[0], decoded[1]] = decoded[2]
            else:
                edits[index][low, high] = found.encode()
    result: list[Text] = list(texts)
    for index, changes in enumerate(edits):
        if not changes:
            continue
        piece, limit = data[index], len(data[index])
        for (low, high), new in sorted(changes.items(), reverse=True):
            if high <= limit:  # overlapping edits (runs of one base64 text): the later one is kept
                piece = piece[:low] + new + piece[high:]
                limit = low
        text = texts[index]
        result[index] = piece if isinstance(text, bytes) else piece.decode("utf-8", "replace")
    return result


def _decoded_run(data: bytes, low: int, high: int, depth: int) -> tuple[int, int, bytes] | None:
    """The base64 text around ``data[low:high]`` scrubbed as what it decodes to: (start, end, new base64),
    or ``None`` where it does not decode to something holding a run."""
    if depth >= _MAX_DEPTH:
        return None
    start, end = low, high
    while start > 0 and data[start - 1] in _BASE64:
        start -= 1
    while end < len(data) and data[end] in _BASE64:
        end += 1
    run = data[start:end]
    urlsafe = b"-" in run or b"_" in run
    whole = len(run) // 4 * 4
    try:
        decoded = base64.b64decode(run[:whole], altchars=b"-_" if urlsafe else None, validate=True)
    except ValueError:
        return None
    scrubbed = scrub_texts([decoded], depth + 1)
    if scrubbed is None:
        return None
    new = _encode(scrubbed[0])
    encoded = base64.urlsafe_b64encode(new) if urlsafe else base64.b64encode(new)
    return start, start + whole, encoded
