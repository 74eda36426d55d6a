"""Finding pieces of remembered secrets inside any text: fixed-length windows of a skeleton.

The *skeleton* of a text is its UTF-8 bytes without the ASCII bytes that are not letters or digits.
The encodings other instrumentations apply (JSON escaped once or twice, HTML escapes, ``repr``, CRLF
line ends) only add or change such bytes, except for the letters of an escape (``\\n`` leaves ``n``,
``&quot;`` leaves ``quot``, ``\\u00e9`` leaves ``u00e9``): a secret's skeleton therefore appears in the
skeleton of an encoded copy as long runs broken by a few letters, and base64 copies are indexed as
their own forms (three byte alignments).

The windows of ``WINDOW`` bytes at one position in ``STEP`` of a secret's forms are indexed (a sample:
dicts, bounded by ``budget`` windows: the oldest half is dropped whole). A text is checked by cutting its
skeleton into windows at every position (C-level ``struct`` unpacking and ``isdisjoint``: the fast
pre-filter, a few nanoseconds per byte): any common run of at least ``MIN_RUN = WINDOW + STEP - 1``
bytes holds a sampled window whole, so it is found whatever its offset. Only a text that shares a window
is searched further: each hit is extended both ways along the form (binary search on slices), over
escape letters (a resynchronisation on the next ``_SYNC`` bytes), and kept when the run is ``MIN_RUN``
bytes or more: a prefix long enough to be unambiguous, a value cut by an attribute limit, a stream
delta, or the whole secret.
"""

from __future__ import annotations

import struct
import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import chain, count
from typing import Final

from loom_otel.core._runtime._fork import renew_after_fork

__all__ = ["MIN_RUN", "STEP", "WINDOW", "SkeletonMap", "WindowIndex", "sample", "shared_stretches", "skeleton"]

WINDOW: Final = 12
STEP: Final = 19
"""Forms are indexed at every ``STEP``-th position (a sample), texts checked at every position: a run of
``WINDOW + STEP - 1`` bytes holds an indexed window whole, wherever it sits."""
MIN_RUN: Final = WINDOW + STEP - 1
"""The shortest run of skeleton bytes (letters and digits) found wherever it sits (30)."""
_DROP: Final = bytes(b for b in range(128) if not chr(b).isalnum())
_BLOCK: Final = 64
_CHUNKS: Final = struct.Struct(f"{WINDOW}s" * _BLOCK)
_CHUNK: Final = struct.Struct(f"{WINDOW}s")
_SAMPLES: Final = struct.Struct(f"{WINDOW}s{STEP - WINDOW}x" * _BLOCK)
_SAMPLE: Final = struct.Struct(f"{WINDOW}s{STEP - WINDOW}x")
_SYNC: Final = 4
_RESYNC: Final = sorted(
    [(k, 0) for k in range(1, 7)]
    + [(0, j) for j in range(1, 5)]
    + [(3, 2), (4, 3), (5, 2), (5, 3), (7, 3), (9, 4), (10, 4)],
    key=sum,
)
"""Skips (letters of the text, bytes of the form) tried where a run breaks: an escape's letters in the
text (``n``, ``quot``, ``amp``), a character written as an escape (``xe9``, ``u00e9``, ``9730``,
``ud83dude00``) in place of its UTF-8 bytes, or a character the text lost (up to 4 bytes)."""
_MAP_BLOCK: Final = 512
_SHORT: Final = 640
"""Below this many bytes a text's windows are sliced one by one (fewer steps than ``WINDOW`` cuts)."""
_FEW: Final = 8


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


def _windows_of(skel: bytes) -> list[bytes]:
    """The windows of a text checked: at every position (slices for a short text, else ``WINDOW`` cuts,
    each C-level: they cost a few microseconds to start)."""
    if len(skel) < _SHORT:
        return [skel[at : at + WINDOW] for at in range(len(skel) - WINDOW + 1)]
    return list(chain.from_iterable(_cut(skel[shift:]) for shift in range(WINDOW)))


def _positions(size: int) -> Iterator[int]:
    """Where the windows ``_windows_of`` a skeleton of ``size`` bytes start, in the same order."""
    if size < _SHORT:
        return iter(range(size - WINDOW + 1))
    return chain.from_iterable(
        range(shift, shift + (size - shift) // WINDOW * WINDOW, WINDOW) for shift in range(WINDOW)
    )


def sample(form: bytes) -> Iterator[bytes]:
    """The windows of ``form`` at every ``STEP``-th position, the last one included (C-level): what is
    indexed of it."""
    whole = len(form) // (STEP * _BLOCK) * (STEP * _BLOCK)
    end = len(form) // STEP * STEP
    last = form[end : end + WINDOW]
    return chain(
        chain.from_iterable(_SAMPLES.iter_unpack(form[:whole])),
        chain.from_iterable(_SAMPLE.iter_unpack(form[whole:end])),
        (last,) if len(last) == WINDOW else (),
    )


_Form = tuple[bytes, str, bool, int, int]
"""One indexed form of a secret: its skeleton, what replaces a run of it, whether it is a base64 copy
(the text holding it is decoded to be scrubbed), and the numbers of the secret's forms (first, how
many: a window they share is extended in each). A plain tuple: the collector stops tracking it."""


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
    eviction on the path that enters a capture). The windows of both are also in one dict, the one a
    text's windows are looked up in (one lookup per window, not one per generation)."""

    def __init__(self, budget: int) -> None:
        self._half = budget // 2
        self._lock = threading.Lock()
        renew_after_fork(self)
        self._young = _Generation()
        self._old = _Generation()
        self._both: dict[bytes, int] = {}
        self._numbers = count()

    def __bool__(self) -> bool:
        return bool(self._both)

    def add(
        self, forms: Sequence[bytes], encoded: Sequence[bytes], replacement: str, first: Sequence[bytes] = ()
    ) -> int:
        """Index the skeletons of a secret's ``forms`` and of its base64 copies (``encoded``); ``first``:
        the ``sample`` of ``forms[0]`` when it was taken already. Its forms' first number (``drop``)."""
        kept = [(f, False, first if i == 0 and first else None) for i, f in enumerate(forms) if len(f) >= MIN_RUN]
        kept += [(f, True, None) for f in encoded if len(f) >= MIN_RUN]
        with self._lock:
            young = self._young
            start = next(self._numbers)
            for _ in kept[1:]:
                next(self._numbers)
            for number, (skel, is_encoded, windows) in enumerate(kept, start):
                young.forms[number] = (skel, replacement, is_encoded, start, len(kept))
                these = dict.fromkeys(sample(skel) if windows is None else windows, number)
                young.windows.update(these)
                self._both.update(these)
                young.size += (len(skel) - WINDOW) // STEP + 1
            if young.size > self._half:
                self._old, self._young = young, _Generation()
                self._both = young.windows.copy()  # the old generation's, dropped whole
        return start

    def drop(self, first: int) -> None:
        """Forget the forms ``add`` numbered from ``first`` (their windows then lead nowhere)."""
        with self._lock:
            for generation in (self._young, self._old):
                form = generation.forms.get(first)
                if form is not None:
                    for number in range(first, first + form[4]):
                        generation.forms.pop(number, None)

    def clear(self) -> None:
        with self._lock:
            self._young, self._old, self._both = _Generation(), _Generation(), {}

    def shared(self, skel: bytes) -> tuple[list[bytes], set[bytes]]:
        """The windows of ``skel`` checked (at every position) and those of them a form has: the
        pre-filter, one C-level pass."""
        if len(skel) < WINDOW:
            return [], set()
        windows = _windows_of(skel)
        return windows, self._both.keys() & windows

    def _forms(self, window: bytes) -> list[_Form]:
        """The forms of the secret that has ``window`` (none when it was dropped meanwhile)."""
        for generation in (self._young, self._old):
            number = generation.windows.get(window)
            form = generation.forms.get(number) if number is not None else None
            if form is not None:
                first, many = form[3], form[4]
                return [f for f in map(generation.forms.get, range(first, first + many)) if f is not None]
        return []

    def runs(self, skel: bytes, windows: list[bytes], shared: set[bytes]) -> list[tuple[int, int, str, bool, int]]:
        """The runs of forms in ``skel`` (``windows`` and ``shared``: what ``shared`` answered): (start,
        end, replacement, in a base64 form, the secret's first form number), in order, not overlapping."""
        if len(shared) <= _FEW:  # most often one phrase the text shares with other text: its places
            places: set[int] = set()
            for window in shared:
                at = skel.find(window)
                while at >= 0:
                    places.add(at)
                    at = skel.find(window, at + 1)
            positions = sorted(places)
        else:  # a secret written out: each window's (last) place at once
            where = dict(zip(windows, _positions(len(skel)), strict=True))
            positions = sorted(where[window] for window in shared)
        found: list[tuple[int, int, str, bool, int]] = []
        for position in positions:
            floor = found[-1][1] if found else 0
            if position < floor:
                continue
            run = self._run(skel, position, floor)
            if run is not None:
                found.append(run)
        return found

    def _run(self, skel: bytes, position: int, floor: int) -> tuple[int, int, str, bool, int] | None:
        """The run of a form through ``skel[position:]`` (not before ``floor``), if one is long enough."""
        window = skel[position : position + WINDOW]
        start, end, best = position, position, None
        for form in self._forms(window):
            offset = form[0].find(window)
            if offset < 0:
                continue
            after = _forward(skel, position, form[0], offset)
            before = _backward(skel, position, form[0], offset)
            if after - before > end - start:
                start, end, best = before, after, form
        start = max(start, floor)
        if best is None or end - start < MIN_RUN:
            return None
        return start, end, best[1], best[2], best[3]


def _common(a: bytes, i: int, b: bytes, j: int) -> int:
    """The length of the longest common prefix of ``a[i:]`` and ``b[j:]`` (galloping, then binary
    search on slices: a chance match ends after a few bytes, a copy of a secret runs long)."""
    limit, low, step = min(len(a) - i, len(b) - j), 0, WINDOW
    while low < limit:
        high = min(low + step, limit)
        if a[i + low : i + high] != b[j + low : j + high]:
            break
        low, step = high, step * 2
    else:
        return low
    while high - low > 1:  # a[i:i+low] matches, a[i:i+high] does not
        middle = (low + high) // 2
        if a[i + low : i + middle] == b[j + low : j + middle]:
            low = middle
        else:
            high = middle
    return low


def _common_back(a: bytes, i: int, b: bytes, j: int) -> int:
    """The length of the longest common suffix of ``a[:i]`` and ``b[:j]``."""
    limit, low, step = min(i, j), 0, WINDOW
    while low < limit:
        high = min(low + step, limit)
        if a[i - high : i - low] != b[j - high : j - low]:
            break
        low, step = high, step * 2
    else:
        return low
    while high - low > 1:
        middle = (low + high) // 2
        if a[i - middle : i - low] == b[j - middle : j - low]:
            low = middle
        else:
            high = middle
    return low


def _forward(a: bytes, i: int, b: bytes, j: int) -> int:
    """Where in ``a`` the run of ``b`` found at ``a[i] == b[j]`` ends, over escape letters."""
    while True:
        step = _common(a, i, b, j)
        i, j = i + step, j + step
        if i >= len(a) or j >= len(b):
            return i
        for skip_a, skip_b in _RESYNC:
            ahead = a[i + skip_a : i + skip_a + _SYNC]
            if len(ahead) == _SYNC and ahead == b[j + skip_b : j + skip_b + _SYNC]:
                i, j = i + skip_a, j + skip_b
                break
        else:
            return i


def _backward(a: bytes, i: int, b: bytes, j: int) -> int:
    """Where in ``a`` the run of ``b`` found at ``a[i] == b[j]`` starts, over escape letters."""
    while True:
        step = _common_back(a, i, b, j)
        i, j = i - step, j - step
        if i <= 0 or j <= 0:
            return i
        for skip_a, skip_b in _RESYNC:
            if skip_a + _SYNC > i or skip_b + _SYNC > j:
                continue
            if a[i - skip_a - _SYNC : i - skip_a] == b[j - skip_b - _SYNC : j - skip_b]:
                i, j = i - skip_a, j - skip_b
                break
        else:
            return i


def shared_stretches(form: bytes, other: bytes, sampled: Sequence[bytes] = ()) -> list[tuple[int, int]]:
    """The stretches (start, end) of ``form`` that ``other`` holds too, each of at least ``MIN_RUN``
    bytes, merged and in order: the larger text's windows at every ``STEP``-th position against the
    smaller one's at every position (the same C-level pre-filter as a record's), then each shared window
    extended both ways along its first ``_FEW`` places in each (``sampled``: ``form``'s sample, when
    taken already)."""
    if len(form) < MIN_RUN or len(other) < MIN_RUN:
        return []
    if len(form) > len(other):
        shared = set(_windows_of(other)).intersection(sampled or sample(form))
    else:
        shared = set(sample(other)).intersection(_windows_of(form))
    found: list[tuple[int, int]] = []
    for at, window in sorted((form.find(window), window) for window in shared):
        if any(start <= at < end for start, end in found):
            continue  # inside a stretch already found
        best = (at, at)
        for here in _places(form, window):
            for there in _places(other, window):
                start = here - _common_back(form, here, other, there)
                end = here + _common(form, here, other, there)
                if end - start > best[1] - best[0]:
                    best = (start, end)
        if best[1] - best[0] >= MIN_RUN:
            found.append(best)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _places(data: bytes, window: bytes) -> Iterator[int]:
    """The first ``_FEW`` places of ``window`` in ``data``."""
    at, left = data.find(window), _FEW
    while at >= 0 and left:
        yield at
        at, left = data.find(window, at + 1), left - 1


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
