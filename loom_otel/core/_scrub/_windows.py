"""Finding pieces of remembered secrets inside any text: fixed-length windows of a skeleton.

The *skeleton* of a text is its UTF-8 bytes without the ASCII bytes that are not letters or digits.
The encodings other instrumentations apply (JSON escaped once or twice, HTML escapes, ``repr``, CRLF
line ends) only add or change such bytes, except for the letters of an escape (``\\n`` leaves ``n``,
``&quot;`` leaves ``quot``, ``\\u00e9`` leaves ``u00e9``): a secret's skeleton therefore appears in the
skeleton of an encoded copy as long runs broken by a few letters, and base64 copies are indexed as
their own forms (three byte alignments).

The windows of ``WINDOW`` bytes at every ``STEP``-th position of a secret's forms are indexed (dicts,
bounded by ``budget`` windows: the oldest half is dropped whole). A text is checked by cutting its
skeleton into windows at the first ``STEP`` positions of every ``WINDOW`` bytes (C-level ``struct``
unpacking and ``isdisjoint``: the fast pre-filter, a few nanoseconds per byte), which finds every common
run of at least ``MIN_RUN`` bytes, whatever its offset. Only a text that shares a window is searched
further: each hit is extended both ways along the form (binary search on slices), over escape letters
(a resynchronisation on the next ``_SYNC`` bytes), and kept when the run is ``MIN_RUN`` bytes or more:
a prefix long enough to be unambiguous, a value cut by an attribute limit, a stream delta, or the whole
secret.
"""

from __future__ import annotations

import struct
import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import chain, count
from typing import Final

__all__ = ["MIN_RUN", "STEP", "WINDOW", "SkeletonMap", "WindowIndex", "skeleton"]

WINDOW: Final = 12
STEP: Final = 4
"""Forms are indexed at every ``STEP``-th position, texts checked at the first ``STEP`` positions of
every ``WINDOW`` bytes: one of those meets an indexed position of any run long enough."""
MIN_RUN: Final = 2 * WINDOW + STEP - 2
"""The shortest run of skeleton bytes (letters and digits) found wherever it sits (26)."""
_DROP: Final = bytes(b for b in range(128) if not chr(b).isalnum())
_BLOCK: Final = 64
_CHUNKS: Final = struct.Struct(f"{WINDOW}s" * _BLOCK)
_CHUNK: Final = struct.Struct(f"{WINDOW}s")
_SYNC: Final = 4
_RESYNC: Final = sorted(((k, j) for k in range(13) for j in range(5) if k or j), key=sum)
"""Skips (bytes of the text, bytes of the form) tried where a run breaks: an escape's letters in the
text (up to 12: ``\\ud83d\\ude00``), a character's bytes the escape replaced in the form (up to 4)."""
_MAP_BLOCK: Final = 512


def skeleton(data: bytes) -> bytes:
    """``data`` without its ASCII bytes that are not letters or digits."""
    return data.translate(None, _DROP)


def _cut(skel: bytes) -> Iterator[bytes]:
    """The windows of ``skel`` at every multiple of ``WINDOW`` (C-level)."""
    whole = len(skel) // (WINDOW * _BLOCK) * (WINDOW * _BLOCK)
    end = len(skel) // WINDOW * WINDOW
    return chain(
        chain.from_iterable(_CHUNKS.iter_unpack(skel[:whole])),
        chain.from_iterable(_CHUNK.iter_unpack(skel[whole:end])),
    )


def _windows_of(skel: bytes) -> Iterator[bytes]:
    """The windows of a text checked: at the first ``STEP`` positions of every ``WINDOW`` bytes."""
    return chain.from_iterable(_cut(skel[shift:]) for shift in range(STEP))


def _positions(size: int) -> Iterator[int]:
    """Where the windows ``_windows_of`` a skeleton of ``size`` bytes start, in the same order."""
    return chain.from_iterable(range(shift, shift + (size - shift) // WINDOW * WINDOW, WINDOW) for shift in range(STEP))


def _every(form: bytes) -> Iterator[bytes]:
    """The windows of ``form`` at every ``STEP``-th position."""
    return chain.from_iterable(_cut(form[offset:]) for offset in range(0, min(WINDOW, len(form) - WINDOW + 1), STEP))


class _Form:
    """One indexed form of a secret: its skeleton and what replaces a run of it."""

    __slots__ = ("encoded", "replacement", "siblings", "skel", "windows")

    def __init__(self, skel: bytes, replacement: str, siblings: list[_Form], encoded: bool) -> None:
        self.skel = skel
        self.replacement = replacement
        self.encoded = encoded
        """A base64 form: the text holding it is decoded to be scrubbed."""
        self.windows = max(0, len(skel) - WINDOW + STEP) // STEP
        self.siblings = siblings
        """The forms of the same secret (this one included): a window they share is extended in each."""
        siblings.append(self)


class _Generation:
    """Windows -> form number (plain ints: the garbage collector never tracks the big dict), and the forms."""

    __slots__ = ("forms", "size", "windows")

    def __init__(self) -> None:
        self.windows: dict[bytes, int] = {}
        self.forms: dict[int, _Form] = {}
        self.size = 0


class WindowIndex:
    """Forms of secrets by their windows, in two generations of at most ``budget // 2`` windows each:
    when the young one is full it becomes the old one and the old one is dropped whole (no per-window
    eviction on the path that enters a capture)."""

    def __init__(self, budget: int) -> None:
        self._half = budget // 2
        self._lock = threading.Lock()
        self._young = _Generation()
        self._old = _Generation()
        self._numbers = count()

    def __bool__(self) -> bool:
        return bool(self._young.windows or self._old.windows)

    def add(self, forms: Sequence[bytes], encoded: Sequence[bytes], replacement: str) -> None:
        """Index the skeletons of a secret's ``forms`` and of its base64 copies (``encoded``)."""
        with self._lock:
            siblings: list[_Form] = []
            young = self._young
            for skel, is_encoded in [*((f, False) for f in forms), *((f, True) for f in encoded)]:
                if len(skel) < MIN_RUN:
                    continue
                form = _Form(skel, replacement, siblings, is_encoded)
                number = next(self._numbers)
                young.forms[number] = form
                young.windows.update(dict.fromkeys(_every(skel), number))
                young.size += form.windows
            if young.size > self._half:
                self._old, self._young = young, _Generation()

    def clear(self) -> None:
        with self._lock:
            self._young, self._old = _Generation(), _Generation()

    def hit(self, skel: bytes) -> bool:
        """Whether ``skel`` shares a window with a form (those at the first ``STEP`` positions of every
        ``WINDOW`` bytes): the pre-filter."""
        if len(skel) < WINDOW:
            return False
        young, old = self._young.windows, self._old.windows
        windows = _windows_of(skel)
        if not old:
            return not young.keys().isdisjoint(windows)
        cut = list(windows)
        return not young.keys().isdisjoint(cut) or not old.keys().isdisjoint(cut)

    def _form(self, window: bytes) -> _Form | None:
        for generation in (self._young, self._old):
            number = generation.windows.get(window)
            if number is not None:
                form = generation.forms.get(number)
                if form is not None:
                    return form
        return None

    def runs(self, skel: bytes) -> list[tuple[int, int, str, bool]]:
        """The runs of forms in ``skel``: (start, end, replacement, in a base64 form), in order, not
        overlapping. Only where a window is shared (a set intersection) is a run looked for."""
        where = dict(zip(_windows_of(skel), _positions(len(skel)), strict=True))  # the last place of each
        shared = self._young.windows.keys() & where.keys()
        shared |= self._old.windows.keys() & where.keys()
        positions = sorted(where[window] for window in shared)
        found: list[tuple[int, int, str, bool]] = []
        reverse = skel[::-1]
        for position in positions:
            floor = found[-1][1] if found else 0
            if position < floor:
                continue
            run = self._run(skel, reverse, position, floor)
            if run is not None:
                found.append(run)
        return found

    def _run(self, skel: bytes, reverse: bytes, position: int, floor: int) -> tuple[int, int, str, bool] | None:
        """The run of a form through ``skel[position:]`` (not before ``floor``), if one is long enough."""
        window = skel[position : position + WINDOW]
        form = self._form(window)
        if form is None:
            return None
        size = len(skel)
        start, end, best = position, position, form
        for sibling in form.siblings:
            offset = sibling.skel.find(window)
            if offset < 0:
                continue
            after, _ = _extend(skel, position, sibling.skel, offset)
            back, _ = _extend(reverse, size - position, sibling.skel[::-1], len(sibling.skel) - offset)
            if after - (size - back) > end - start:
                start, end, best = size - back, after, sibling
        start = max(start, floor)
        return (start, end, best.replacement, best.encoded) if end - start >= MIN_RUN else None


def _common(a: bytes, i: int, b: bytes, j: int) -> int:
    """The length of the longest common prefix of ``a[i:]`` and ``b[j:]`` (binary search on slices)."""
    low, high = 0, min(len(a) - i, len(b) - j)
    while low < high:
        middle = (low + high + 1) // 2
        if a[i : i + middle] == b[j : j + middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _extend(a: bytes, i: int, b: bytes, j: int) -> tuple[int, int]:
    """Where the run of ``b`` from ``b[j]`` found at ``a[i]`` ends in each, over escape letters."""
    while True:
        step = _common(a, i, b, j)
        i, j = i + step, j + step
        if i >= len(a) or j >= len(b):
            return i, j
        for skip_a, skip_b in _RESYNC:
            ahead = a[i + skip_a : i + skip_a + _SYNC]
            if len(ahead) == _SYNC and ahead == b[j + skip_b : j + skip_b + _SYNC]:
                i, j = i + skip_a, j + skip_b
                break
        else:
            return i, j


class SkeletonMap:
    """Positions in ``data`` of the bytes of its skeleton (for the few texts that hold a run)."""

    __slots__ = ("_counts", "_data")

    def __init__(self, data: bytes) -> None:
        self._data = data
        counts = [0]
        for start in range(0, len(data), _MAP_BLOCK):
            counts.append(counts[-1] + len(skeleton(data[start : start + _MAP_BLOCK])))
        self._counts = counts

    def position(self, index: int) -> int:
        """Where the ``index``-th skeleton byte is in ``data``."""
        block = bisect_right(self._counts, index) - 1
        start = block * _MAP_BLOCK
        need = index - self._counts[block] + 1
        low, high = start, min(len(self._data), start + _MAP_BLOCK)
        while low < high:  # the shortest data[start:x] holding ``need`` skeleton bytes ends at x
            middle = (low + high) // 2
            if len(skeleton(self._data[start : middle + 1])) >= need:
                high = middle
            else:
                low = middle + 1
        return low

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The byte range in ``data`` from the ``start``-th to the ``end - 1``-th skeleton byte, widened
        to whole UTF-8 characters."""
        data = self._data
        first, last = self.position(start), self.position(end - 1) + 1
        while first > 0 and data[first] & 0xC0 == 0x80:
            first -= 1
        while last < len(data) and data[last] & 0xC0 == 0x80:
            last += 1
        return first, last
