"""What this process captured, remembered for the scrubber: bounded, in memory only, across traces.

- **Exact values**: the newest ``_MAX_ENTRIES`` texts and signatures (each signature in its base64
  forms) -> (replacement marker, ref, digest, size): a value that is one of them becomes its marker.
- **Windows** (``_windows.WindowIndex``): the skeleton forms of every text and signature (a text's
  ASCII JSON escape where it differs, and its base64 at three alignments, the first ``_BASE64_CHARS``
  characters of each), at most ``_MAX_WINDOWS`` windows (about 100 bytes each): any run of at least
  ``MIN_RUN`` letters and digits of one of them, in any later span or log record of any trace.
- **Short secrets** (fewer letters and digits than ``MIN_RUN``, at least ``_MIN_NEEDLE`` characters):
  searched for as they are and JSON-escaped inside the values of their own trace (the newest
  ``_MAX_TRACES`` traces), where a run that short is unambiguous.

What the call that produced a text sent or returned visibly (``_visible``: its request's messages and
tool results, its answer and tool arguments) is not a secret: the stretches of the text of at least
``MIN_RUN`` letters and digits that it holds are left out of the windows (the rest of the text is
indexed piece by piece, so a run never extends into them), and a short secret it holds is not searched
for. The whole text is still an exact value. Reading what a call showed costs as much as entering its
text, and most texts are never found again: a text is indexed whole and its call's visible text read
when a record first holds a run of it (``resolve``: the text is then indexed as its pieces and the record
searched again), for the newest ``_MAX_UNREAD`` texts; a short text's is read as it is entered.

``remember`` (on the model call's path) only queues a capture; the first question asked of the registry
enters what is queued. A question asked while another thread enters captures waits for it
(``_entering``): a capture taken off the queue is not in the index until it is entered.
"""

from __future__ import annotations

import base64
import bisect
import contextlib
import json
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from itertools import count
from typing import Any, Final

from loom_otel.core._evidence._model import Reasoning, ReasoningPart
from loom_otel.core._runtime._fork import renew_after_fork
from loom_otel.core._scrub._visible import shown, visible_skeleton
from loom_otel.core._scrub._windows import (
    MIN_RUN,
    STEP,
    SkeletonMap,
    WindowIndex,
    sample,
    shared_stretches,
    skeleton,
)

__all__ = [
    "NEVER",
    "REMOVED",
    "SAFE_LAG",
    "Kept",
    "forget_all",
    "marker",
    "reference_of",
    "registry",
    "remember",
    "sight",
    "signature_forms",
]

REMOVED: Final = "[reasoning removed by loom-otel]"
"""What a reasoning text or signature loom-otel has no reference for becomes."""
_MIN_NEEDLE: Final = 8
"""Texts shorter than this are not searched for inside larger values (they are still replaced where a
reasoning shape holds them)."""
_MAX_ENTRIES: Final = 4096
_MAX_WINDOWS: Final = 1 << 16
_BASE64_CHARS: Final = 256
_MAX_TRACES: Final = 1024
_UNTRACED_SEARCH: Final = 4

Kept = tuple[str | None, str | None, int]
"""What replaces a captured text or signature: its part's (ref, digest, size); ref and digest ``None``
where nothing readable was kept."""
_Capture = tuple[Any, ...]
"""One call's capture as ``remember`` queues it, flat: the trace id, the capture's number (what the call
showed is kept apart under it, ``_Registry.visible``), then text, signature, ref, digest and size of
each part: plain values only, which the garbage collector stops tracking."""
NEVER: Final = 1 << 62
SAFE_LAG: Final = _MAX_WINDOWS // 2 * STEP // 2
"""How much (``_Registry.queued``) may be captured between a span's end and its scrub with everything
the scrub would have had at the span's end still held: half of what one generation of windows takes
(the exact values, the traces' short secrets and the queue hold more)."""
_UNREAD: Final = object()
_MAX_SHOWN: Final = 16
"""Captures not yet entered whose visible text is kept (older ones are indexed whole: more is removed)."""
_MAX_SHOWN_LATE: Final = 256
"""The same while spans wait for a batch's export thread (``on_alarm`` set), which enters captures late;
from half of it on, ``on_alarm`` is called (its helper thread enters them)."""
_MAX_UNREAD: Final = 256
"""Texts entered whole whose call's visible text is kept to be read (a reference to its request and
answer, their top-level lists copied) until a record holds a run of them; beyond it, the oldest stays
whole: more is removed, never less."""
_PIECE: Final = 5
_FIRST: Final = 2
_MIN_COST: Final = 512
"""The least a capture counts for in ``_Registry.queued`` (so a run of many small captures counts too)."""


def _cost(capture: Sequence[Any]) -> int:
    """What entering ``capture`` adds to the windows, about: its characters, eight per character of a
    text that is not ASCII (UTF-8 bytes, and its ASCII JSON form beside), at least ``_MIN_COST``."""
    cost = 0
    for i in range(_FIRST, len(capture), _PIECE):
        for secret in capture[i : i + 2]:
            if isinstance(secret, str):
                cost += len(secret) if secret.isascii() else 8 * len(secret)
            elif secret:
                cost += 2 * len(secret)
    return max(cost, _MIN_COST)


class _Needles:
    """The short secrets of one trace as searched for inside larger values: (needle, replacement),
    longest first, JSON-escaped forms included, with minus each length (ascending) to skip those too
    long; rebuilt on the first search after a change (``version``: adds so far, under the registry's
    lock), replaced in one assignment with the version it was built from, so a search on another thread
    during a rebuild builds its own rather than reading one without the newest secret."""

    __slots__ = ("built", "secrets", "version")

    def __init__(self) -> None:
        self.secrets: dict[str, str] = {}
        self.version = 0
        self.built: tuple[int, tuple[tuple[str, str], ...], list[int]] = (0, (), [])

    def add(self, secret: str, replacement: str) -> None:
        self.secrets[secret] = replacement
        self.version += 1

    def fitting(self, length: int) -> Sequence[tuple[str, str]]:
        version, pairs, lengths = self.built
        if version != self.version:
            version = self.version  # read before the secrets: each add up to it is in them
            found: dict[str, str] = {}
            for secret, replacement in list(self.secrets.items()):
                found[secret] = replacement
                for ascii_only in (True, False):
                    found.setdefault(json.dumps(secret, ensure_ascii=ascii_only)[1:-1], replacement)
            pairs = tuple(sorted(found.items(), key=lambda item: -len(item[0])))
            lengths = [-len(needle) for needle, _ in pairs]
            self.built = (version, pairs, lengths)
        return pairs[bisect.bisect_left(lengths, -length) :]


def _unseen(text: str, data: bytes, skel: bytes, seen: bytes, sampled: Sequence[bytes]) -> list[str] | None:
    """The pieces of ``text`` (``data`` its UTF-8, ``skel`` its skeleton, ``sampled`` the sample of it)
    between its stretches that ``seen`` (a skeleton of visible text) holds; ``None`` when it holds none."""
    stretches = shared_stretches(skel, seen, sampled) if seen else []
    if not stretches:
        return None
    places = SkeletonMap(data)
    pieces, last = [], 0
    for start, end in stretches:
        low, high = places.span(start, end)
        pieces.append(data[last:low])
        last = high
    pieces.append(data[last:])
    return [piece.decode("utf-8", "surrogatepass") for piece in pieces if piece]


def _text_forms(text: str, data: bytes, skel: bytes) -> tuple[list[bytes], list[bytes]]:
    """The skeletons of a text as written (raw, and ASCII JSON where that differs) and in base64
    (``data``: its UTF-8, ``skel``: its skeleton)."""
    forms = [skel]
    if not text.isascii():
        forms.append(skeleton(json.dumps(text).encode()))
    return forms, [_base64_head(data[shift:]) for shift in range(3)]


def _base64_head(data: bytes) -> bytes:
    """The first ``_BASE64_CHARS`` letters and digits of ``data``'s base64 (of a prefix whose length is a
    multiple of 3, as that encodes to a prefix of the whole's; the whole when the prefix holds too few)."""
    head = skeleton(base64.b64encode(data[: _BASE64_CHARS * 3 // 2]))[:_BASE64_CHARS]
    if len(head) < _BASE64_CHARS and len(data) > _BASE64_CHARS * 3 // 2:
        head = skeleton(base64.b64encode(data))[:_BASE64_CHARS]
    return head


class _Registry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entering = threading.RLock()
        """Held while captures are taken off the queue and entered (re-entrant: a log record written
        meanwhile, by what reading a call's objects runs, is scrubbed on the same thread)."""
        self._busy = 0
        """How many ``enter_captured`` of the thread holding ``_entering`` are under way."""
        self._exact: OrderedDict[str, tuple[str, str | None, str | None, int]] = OrderedDict()
        self.windows = WindowIndex(_MAX_WINDOWS)
        self._traces: OrderedDict[int, _Needles] = OrderedDict()
        self._captured: deque[_Capture] = deque(maxlen=_MAX_ENTRIES)
        self._shown: dict[int, object] = {}
        self._unread: OrderedDict[int, tuple[str, str, object]] = OrderedDict()
        """Texts entered whole (by their first form number) whose call's visible text is not read yet:
        text, replacement, what the call showed (the newest ``_MAX_UNREAD``; older ones stay whole)."""
        self._numbers = count()
        self.queued = 0
        """The ``_cost`` of every capture queued so far (approximate: no lock on the model call's path)."""
        self.alarm = NEVER
        """When ``queued`` reaches it, ``on_alarm`` is called (``_deferred``: spans wait to be scrubbed)."""
        self.on_alarm: Callable[[], None] | None = None
        renew_after_fork(self, _Registry._after_fork)

    def _after_fork(self) -> None:
        self._busy = 0  # the thread entering captures at the fork is not in the child

    def captured(self, capture: list[object], shown: object) -> None:
        """Queue ``capture`` (``remember``'s, its number still to be set), with what its call ``shown``."""
        number = next(self._numbers)  # atomic, as the appends: no lock on the model call's path
        capture[1] = number
        if shown is not None:
            self._shown[number] = shown  # atomic, as the trim below (another thread may trim the same)
            while len(self._shown) > (_MAX_SHOWN if self.on_alarm is None else _MAX_SHOWN_LATE):
                with contextlib.suppress(RuntimeError, StopIteration, KeyError):
                    del self._shown[next(iter(self._shown))]
        self.queued += _cost(capture)
        self._captured.append(tuple(capture))
        if self.on_alarm is not None and (self.queued >= self.alarm or len(self._shown) > _MAX_SHOWN_LATE // 2):
            self.on_alarm()

    def _shown_by(self, number: int) -> object:
        """What capture ``number``'s call showed (taken out: read once), else ``None``."""
        return self._shown.pop(number, None)

    def enter_captured(self) -> None:
        with self._entering:
            self._busy += 1
            try:
                captured = self._captured
                while captured:
                    self._enter(captured.popleft())
            finally:
                self._busy -= 1

    def _entered(self) -> None:
        """Every capture queued so far entered: by this thread, or by the one entering them now."""
        if self._captured or self._busy:
            self.enter_captured()

    def _enter(self, capture: _Capture) -> None:
        trace_id: int = capture[0]
        shown: object = _UNREAD
        for i in range(_FIRST, len(capture), _PIECE):
            text, signature, ref, digest, size = capture[i : i + _PIECE]
            if text:
                if shown is _UNREAD:
                    shown = self._shown_by(capture[1])
                kept = (ref, digest, size)
                self.add_text(text, marker(ref, digest, size, "text"), kept, trace_id, shown=shown)
            if signature:
                self.add_signature(signature, marker(ref, digest, size, "signature"), (ref, digest, size), trace_id)

    def add_text(
        self, text: str, replacement: str, kept: Kept, trace_id: int, seen: bytes = b"", *, shown: object = None
    ) -> None:
        """Enter a text; ``seen``: the skeleton of what its call sent or returned visibly, or ``shown``:
        what it showed, read only when a record holds a run of the text (``resolve``) or the text is
        short (whether it is searched for depends on it)."""
        data = text.encode("utf-8", "surrogatepass")
        skel = skeleton(data)
        if shown is not None and len(skel) < MIN_RUN:
            seen, shown = visible_skeleton(shown), None
        if self._add(text, replacement, kept, trace_id, seen):
            sampled = list(sample(skel))
            pieces = _unseen(text, data, skel, seen, sampled)
            if pieces is None:
                forms, encoded = _text_forms(text, data, skel)
                first = self.windows.add(forms, encoded, replacement, sampled)
                if shown is not None:
                    with self._lock:
                        self._unread[first] = (text, replacement, shown)
                        while len(self._unread) > _MAX_UNREAD:
                            self._unread.popitem(last=False)
                return
            self._add_pieces(pieces, replacement)

    def _add_pieces(self, pieces: Sequence[str], replacement: str) -> None:
        """Index the pieces of a text between the stretches its call showed."""
        forms: list[bytes] = []
        encoded: list[bytes] = []
        for piece in pieces:
            piece_data = piece.encode("utf-8", "surrogatepass")
            piece_forms, piece_encoded = _text_forms(piece, piece_data, skeleton(piece_data))
            forms += piece_forms
            encoded += piece_encoded
        self.windows.add(forms, encoded, replacement)

    def resolve(self, firsts: Iterable[int]) -> bool:
        """Read what the calls of the texts numbered ``firsts`` (runs found in a record) showed, if not
        read yet; True when a text held some of it, which is no longer searched for (its pieces around
        it are indexed in its place: search again)."""
        changed = False
        for first in firsts:
            with self._lock:
                entry = self._unread.pop(first, None)
            if entry is None:
                continue
            text, replacement, shown = entry
            data = text.encode("utf-8", "surrogatepass")
            pieces = _unseen(text, data, skeleton(data), visible_skeleton(shown), ())
            if pieces is not None:  # its pieces indexed before it is dropped: a search meanwhile finds either
                self._add_pieces(pieces, replacement)
                self.windows.drop(first)
                changed = True
        return changed

    def add_signature(self, signature: str | bytes, replacement: str, kept: Kept, trace_id: int) -> None:
        forms = list(signature_forms(signature))
        if any([self._add(form, replacement, kept, trace_id) for form in forms]):
            self.windows.add([skeleton(forms[0].encode())], (), replacement)

    def _add(self, secret: str, replacement: str, kept: Kept, trace_id: int, seen: bytes = b"") -> bool:
        """Enter ``secret`` as an exact value (and a short needle of its trace, unless ``seen`` holds it);
        True when its replacement is new (its windows are to be indexed)."""
        short = skeleton(secret.encode("utf-8", "replace"))
        visible = bool(short) and short in seen
        needle = len(secret) >= _MIN_NEEDLE and bool(trace_id) and len(short) < MIN_RUN and not visible
        with self._lock:
            old = self._exact.get(secret)
            self._exact[secret] = (replacement, *kept)
            self._exact.move_to_end(secret)
            while len(self._exact) > _MAX_ENTRIES:
                self._exact.popitem(last=False)
            if needle:
                needles = self._traces.get(trace_id)
                if needles is None:
                    needles = self._traces[trace_id] = _Needles()
                    while len(self._traces) > _MAX_TRACES:
                        self._traces.popitem(last=False)
                needles.add(secret, replacement)
            return old is None or old[0] != replacement

    def get(self, value: str) -> str | None:
        self._entered()
        found = self._exact.get(value)
        return found[0] if found is not None else None

    def reference(self, value: str) -> tuple[str, str | None, str | None, int] | None:
        self._entered()
        return self._exact.get(value)

    def needles(self, trace_id: int | None, length: int) -> Sequence[tuple[str, str]]:
        """The short needles of ``trace_id`` that fit in a value of ``length`` characters, longest
        first; for a record outside any trace, those of the newest ``_UNTRACED_SEARCH`` traces."""
        if not self._traces:
            return ()
        if trace_id:
            needles = self._traces.get(trace_id)
            return needles.fitting(length) if needles is not None else ()
        with self._lock:
            recent = list(self._traces.values())[-_UNTRACED_SEARCH:]
        return [pair for needles in reversed(recent) for pair in needles.fitting(length)]

    def has_windows(self) -> bool:
        self._entered()
        return bool(self.windows)

    def clear(self) -> None:
        with self._lock:
            self._captured.clear()
            self._shown.clear()
            self._unread.clear()
            self._exact.clear()
            self._traces.clear()
        self.windows.clear()


registry: Final = _Registry()


def marker(ref: str | None, digest: str | None, size: int, what: str) -> str:
    """What replaces a captured text (``what="text"``) or signature: its reference, digest and size, or
    the removal marker where nothing readable was kept."""
    if ref:
        return f"[loom-otel reasoning {what} ref={ref} digest={digest} size={size}]"
    return REMOVED


def signature_forms(signature: str | bytes) -> Iterable[str]:
    """A signature as it is written: itself, or (bytes, Gemini) its standard and URL-safe base64."""
    if isinstance(signature, str):
        yield signature
        return
    yield base64.b64encode(signature).decode()
    yield base64.urlsafe_b64encode(signature).decode()


def remember(
    reasonings: Sequence[Reasoning], parts: Sequence[ReasoningPart], trace_id: int, visible: object = None
) -> None:
    """Remember what one call (of trace ``trace_id``) captured: each text and signature with the
    reference that replaces it; ``visible``: what the call sent and returned visibly (its request's
    keyword arguments and its answer's messages, ``_visible``), no secret. Entered, and ``visible``
    read, when the registry is next asked, not on the model call's path (where only its top-level
    lists are copied: a conversation the application appends to later is read as it was sent)."""
    capture: list[object] = [trace_id, None]
    for r, p in zip(reasonings, parts, strict=False):
        capture += (r.text, r.signature, p.text_ref, p.digest, p.size)
    registry.captured(capture, shown(visible) if visible is not None else None)


def sight(reasonings: Sequence[Reasoning], trace_id: int) -> None:
    """Register a response's reasoning as soon as it is parsed, before capture (removal markers until
    ``remember`` gives their references). For the wrappers to call where another instrumentation wrapped
    inside loom-otel could record the response first (it returns to that wrapper before loom-otel's)."""
    for reasoning in reasonings:
        kept: Kept = (None, None, len((reasoning.text or "").encode()))
        if reasoning.text and registry.get(reasoning.text) is None:
            registry.add_text(reasoning.text, REMOVED, kept, trace_id)
        signature = reasoning.signature
        if signature and all(registry.get(form) is None for form in signature_forms(signature)):
            registry.add_signature(signature, REMOVED, kept, trace_id)


def reference_of(secret: str) -> tuple[str, str | None, str | None, int] | None:
    """(replacement marker, ref, digest, size) of a text or signature loom-otel captured recently."""
    return registry.reference(secret)


def forget_all() -> None:
    """Forget every remembered text and signature (tests)."""
    registry.clear()
