"""The durable outbox of one chain (origin): what the downstream acknowledged, what is still owed.

State kept per origin:

- ``cursor``: every record with ``seq <= cursor`` was acknowledged by the inner exporter. It is
  persisted in ``<origin>/.delivered`` (atomic replace) so that the next process, or
  ``loom-otel forward``, resumes there after a crash: at worst it resends what was acknowledged since
  the last save (identical duplicates, which ``verify`` accepts).
- ``above``: acknowledged seqs beyond the cursor (the span pipeline delivers out of order);
- ``failed``: seqs whose export failed: owed now, with no grace period;
- ``position``: where in the journal the first record not yet acknowledged starts, so a sweep
  re-reads only the unacknowledged part of the chain; a sweep first moves it past the acknowledged
  records a chunk at a time (``_skip_acknowledged``), without reading them line by line.

A claim (``flock`` on ``<origin>/.forward``) makes sure one forwarder at a time works on a dead origin.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Final

from loom_otel.core.journal import MAX_LINE_BYTES, Position, read_lines, segments

__all__ = ["Outbox"]

CURSOR_FILE: Final = ".delivered"
CLAIM_FILE: Final = ".forward"

_logger = logging.getLogger(__name__)


class Outbox:
    """Delivery state of one origin's chain. Not thread-safe: the exporter holds its lock."""

    def __init__(self, origin_dir: Path) -> None:
        self.dir = origin_dir
        self.origin = origin_dir.name
        self.cursor = self._load_cursor()
        self.above: set[int] = set()
        self.failed: set[int] = set()
        self.position = Position()
        self.complete = False
        self._saved = self.cursor
        self._claim_fd = -1
        self._warned_torn = False
        self._warned_malformed = False

    # -- acknowledgements ----------------------------------------------------------------------

    def delivered(self, seqs: Iterable[int]) -> None:
        for seq in seqs:
            self.failed.discard(seq)
            if seq > self.cursor:
                self.above.add(seq)
        while self.cursor + 1 in self.above:
            self.above.remove(self.cursor + 1)
            self.cursor += 1

    def undelivered(self, seqs: Iterable[int]) -> None:
        self.failed.update(s for s in seqs if s > self.cursor and s not in self.above)

    def is_delivered(self, seq: int) -> bool:
        return seq <= self.cursor or seq in self.above

    # -- reading what is owed ------------------------------------------------------------------

    def owed(
        self, now_ns: int, grace_ns: int, *, everything: bool, live: bool, deadline: float | None = None
    ) -> Iterator[dict[str, object]]:
        """Records not yet acknowledged that are due: all of them when ``everything``; otherwise
        those whose export failed and those older than ``grace_ns`` (their span was dropped, or is
        still open, or they have none, like checkpoints; a resend of a record whose span does arrive
        is an identical duplicate). A chain is in time order, so the scan stops at the first record
        not yet due unless failed exports are still owed. ``TimeoutError`` once ``time.monotonic()``
        passes ``deadline`` (checked between lines: a scan of a long chain does not outlive it)."""
        contiguous = True
        position = self.position = _skip_acknowledged(self.dir, self.position, self._first_owed)
        run = 0  # acknowledged lines read one by one in a row: past _RUN, try passing over chunks again
        while True:
            for line in read_lines(self.dir, position):
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError("the deadline passed while reading the journal")
                if line.torn:
                    if not live and not self._warned_torn:
                        self._warned_torn = True
                        _logger.warning(
                            "audit journal %s ends with a torn line (%d bytes): its writer died mid-write; "
                            "`loom-otel verify` reports it",
                            self.origin,
                            line.size,
                        )
                    return
                known = _seq_of(line.data)
                if known is not None and self.is_delivered(known):
                    if contiguous:
                        self.position = line.end
                    run += 1
                    if run < _RUN:
                        continue  # acknowledged: skipped without parsing the record
                    run = 0
                    ahead = _skip_acknowledged(self.dir, line.end, self._first_owed)
                    if ahead == line.end:
                        continue
                    if contiguous:
                        self.position = ahead
                    position = ahead
                    break  # read on from there
                run = 0
                record = _parse(line.data)
                if record is None:
                    if not self._warned_malformed:
                        self._warned_malformed = True
                        _logger.warning(
                            "audit journal %s holds a malformed line%s; it is not forwarded",
                            self.origin,
                            f" (over {MAX_LINE_BYTES} bytes)" if line.too_long else "",
                        )
                    if contiguous:
                        self.position = line.end
                    continue
                seq = record["seq"]
                assert isinstance(seq, int)
                if self.is_delivered(seq):
                    if contiguous:
                        self.position = line.end
                    continue
                contiguous = False
                time_ns = record.get("time")
                if everything or seq in self.failed or not isinstance(time_ns, int) or now_ns - time_ns >= grace_ns:
                    yield record
                elif not self.failed:
                    return
            else:
                return

    def _first_owed(self, first: int, last: int) -> int | None:
        """The first seq from ``first`` to ``last`` not acknowledged; ``None`` when all are."""
        above = self.above
        return next((seq for seq in range(max(first, self.cursor + 1), last + 1) if seq not in above), None)

    # -- persistence and claims ----------------------------------------------------------------

    def _load_cursor(self) -> int:
        try:
            value = int((self.dir / CURSOR_FILE).read_text().strip() or 0)
        except (OSError, ValueError):
            return 0
        return max(0, value)

    def save(self) -> None:
        """Persist the cursor if it moved (no fsync: losing it only causes identical duplicates)."""
        if self.cursor == self._saved:
            return
        tmp = self.dir / f"{CURSOR_FILE}.{os.getpid()}.tmp"
        try:
            tmp.write_text(str(self.cursor))
            os.replace(tmp, self.dir / CURSOR_FILE)
        except OSError as exc:
            _logger.warning("audit journal %s: cannot save the delivery cursor (%s)", self.origin, type(exc).__name__)
            return
        self._saved = self.cursor

    def claim(self) -> bool:
        """Take the forwarding claim of a dead origin (held until ``release``); ``False`` if taken."""
        if self._claim_fd >= 0:
            return True
        try:
            fd = os.open(self.dir / CLAIM_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._claim_fd = fd
        self.cursor = max(self.cursor, self._load_cursor())
        return True

    def release(self) -> None:
        if self._claim_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._claim_fd)
            self._claim_fd = -1


_SEQ: Final = b',"seq":'
_SKIP_CHUNK: Final = 1 << 20
_RUN: Final = 16
"""Acknowledged lines read one by one in a row after which a sweep tries passing over chunks again."""


def _skip_acknowledged(origin_dir: Path, start: Position, first_owed: Callable[[int, int], int | None]) -> Position:
    """Where a run of acknowledged records starting at ``start`` (a line start) ends, read a chunk of
    whole lines at a time. A chunk whose lines are records numbered one after the other (as many lines
    as seqs from its first to its last) is passed over up to ``first_owed(first, last)`` (the first seq
    in it not acknowledged, ``None``: none), without parsing its lines. Anything else (a malformed or
    torn line, a line longer than a chunk) stops it where that chunk starts, for the line-by-line
    reading to judge."""
    position = start
    for number, path in segments(origin_dir):
        if number < position.segment:
            continue
        offset = position.offset if number == position.segment else 0
        try:
            fh = path.open("rb")
        except OSError:
            return position
        with fh:
            fh.seek(offset)
            while chunk := fh.read(_SKIP_CHUNK):
                end = chunk.rfind(b"\n") + 1
                first = _seq_of(chunk[: chunk.find(b"\n") + 1]) if end else None
                last = _seq_of(chunk[chunk.rfind(b"\n", 0, end - 1) + 1 : end]) if end else None
                if first is None or last is None or chunk.count(b"\n", 0, end) != last - first + 1:
                    return position  # a line that is not the next record: read line by line
                owed = first_owed(first, last)
                if owed is not None:  # up to its line
                    cut = 0
                    for _ in range(owed - first):
                        cut = chunk.find(b"\n", cut) + 1
                    return Position(number, offset + cut)
                offset += end
                position = Position(number, offset)
                fh.seek(offset)
    return position


def _seq_of(data: bytes) -> int | None:
    """The ``seq`` of a journal line read off its bytes (``None``: read it by parsing). In a record's
    canonical JSON the top-level ``seq`` is the last ``,"seq":`` (only ``time``, ``type`` and ``v``
    follow it, and a JSON string cannot hold an unescaped quote)."""
    start = data.rfind(_SEQ)
    if start < 0:
        return None
    start += len(_SEQ)
    end = data.find(b",", start)
    digits = data[start:end] if end >= 0 else b""
    return int(digits) if digits.isdigit() and len(digits) < 20 else None


def _parse(data: bytes) -> dict[str, object] | None:
    try:
        record = json.loads(data)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    seq = record.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int):
        return None
    return record
