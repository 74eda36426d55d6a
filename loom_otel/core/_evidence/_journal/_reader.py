"""Reading journal chains back: the one place that lists origins and segments, lines in order,
resumable positions, torn tails, liveness.

Used by the chained exporter (to resend what the span pipeline lost), by ``verify``, by the audit
readers through ``iter_records`` (every parseable record). Readers never write to a chain; a line without its newline at
the end of a chain is reported as ``torn`` (the writer died mid-write, or is writing it right now:
``origin_is_live`` tells which).

A line longer than ``MAX_LINE_BYTES`` (a writer's record is a few KiB: references, digests and sizes,
never text) is never held in memory: it is skipped up to its newline and reported ``too_long`` with
no data, so every reader counts it as malformed.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

__all__ = [
    "MAX_LINE_BYTES",
    "Line",
    "Position",
    "all_segments",
    "iter_records",
    "list_origins",
    "origin_is_live",
    "read_lines",
    "segments",
]

SEGMENT_SUFFIX: Final = ".jsonl"
_CHUNK: Final = 1 << 20
MAX_LINE_BYTES: Final = 16 << 20
"""The longest journal line a reader accepts (16 MiB); a longer one is skipped as malformed."""


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """A place in a chain: segment number and byte offset within it."""

    segment: int = 0
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a chain: its bytes (with the newline, unless ``torn``), where it starts and ends.

    ``too_long``: the line exceeded the reader's limit; ``data`` is then empty (``size`` still counts it).
    """

    data: bytes
    start: Position
    end: Position
    torn: bool = False
    too_long: bool = False

    @property
    def size(self) -> int:
        """The line's length in the file (its ``data`` may be empty when ``too_long``)."""
        return self.end.offset - self.start.offset


def list_origins(directory: str | os.PathLike[str]) -> list[str]:
    """The origins (chain directories) under a journal directory, sorted."""
    try:
        with os.scandir(directory) as entries:  # the entries' types from the directory itself: no stat each
            return sorted(e.name for e in entries if not e.name.startswith(".") and e.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def segments(origin_dir: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """``(number, path)`` of each segment of a chain, in order."""
    found: list[tuple[int, Path]] = []
    root = Path(origin_dir)
    try:
        with os.scandir(root) as entries:
            for entry in entries:
                stem = entry.name.removesuffix(SEGMENT_SUFFIX)
                if entry.name.endswith(SEGMENT_SUFFIX) and stem.isdigit() and entry.is_file():
                    found.append((int(stem), root / entry.name))
    except (FileNotFoundError, NotADirectoryError):
        return found
    found.sort()
    return found


def all_segments(directory: str | os.PathLike[str]) -> list[tuple[str, Path]]:
    """``(origin, path)`` of every segment under a journal directory, chain by chain, each in order."""
    root = Path(directory)
    return [(origin, path) for origin in list_origins(root) for _, path in segments(root / origin)]


def read_lines(
    origin_dir: str | os.PathLike[str], start: Position = Position(), *, max_line: int = MAX_LINE_BYTES
) -> Iterator[Line]:
    """The lines of a chain from ``start`` on, streaming: memory is bounded by ``max_line`` (longer
    lines come out ``too_long``, without data), and each byte is searched once."""
    for number, path in segments(origin_dir):
        if number < start.segment:
            continue
        try:
            fh = path.open("rb")
        except OSError:
            continue
        with fh:
            offset = start.offset if number == start.segment else 0
            fh.seek(offset)
            yield from _lines(fh, number, offset, max_line)


def _lines(fh: BinaryIO, number: int, offset: int, max_line: int) -> Iterator[Line]:
    parts: list[bytes] = []  # the current line's bytes so far (none once it is too long)
    held = 0  # their length, or the bytes skipped of a line that is too long
    too_long = False
    while chunk := fh.read(_CHUNK):
        begin = 0
        while (newline := chunk.find(b"\n", begin)) >= 0:
            piece = chunk[begin : newline + 1]
            size = held + len(piece)
            too_long = too_long or size > max_line
            data = b"" if too_long else b"".join((*parts, piece))
            yield Line(data, Position(number, offset), Position(number, offset + size), too_long=too_long)
            offset += size
            parts, held, too_long = [], 0, False
            begin = newline + 1
        rest = chunk[begin:]
        held += len(rest)
        if too_long or held > max_line:
            too_long, parts = True, []
        elif rest:
            parts.append(rest)
    if held:
        data = b"" if too_long else b"".join(parts)
        yield Line(data, Position(number, offset), Position(number, offset + held), torn=True, too_long=too_long)


def origin_is_live(origin_dir: str | os.PathLike[str]) -> bool:
    """Whether a writer process holds this chain open (its ``flock`` on the directory)."""
    try:
        fd = os.open(origin_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def iter_records(directory: str | os.PathLike[str]) -> Iterator[dict[str, object]]:
    """Every parseable record under ``directory``, chain by chain, in file order (``list_origins`` and
    ``read_lines``; a torn, too long or malformed line is skipped)."""
    for origin in list_origins(directory):
        for line in read_lines(Path(directory) / origin):
            if line.torn or line.too_long:
                continue
            try:
                record = json.loads(line.data)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record
