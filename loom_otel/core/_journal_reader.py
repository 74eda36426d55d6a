"""Reading journal chains back: the one place that lists origins and segments, lines in order,
resumable positions, torn tails, liveness.

Used by the chained exporter (to resend what the span pipeline lost), by ``verify``, by the audit
readers and ``_journal.iter_records``. Readers never
write to a chain; a line without its newline at the end of a chain is reported as ``torn`` (the writer
died mid-write, or is writing it right now: ``origin_is_live`` tells which).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["Line", "Position", "all_segments", "list_origins", "origin_is_live", "read_lines", "segments"]

SEGMENT_SUFFIX: Final = ".jsonl"
_CHUNK: Final = 1 << 20


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """A place in a chain: segment number and byte offset within it."""

    segment: int = 0
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a chain: its bytes (with the newline, unless ``torn``), where it starts and ends."""

    data: bytes
    start: Position
    end: Position
    torn: bool = False


def list_origins(directory: str | os.PathLike[str]) -> list[str]:
    """The origins (chain directories) under a journal directory, sorted."""
    root = Path(directory)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def segments(origin_dir: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """``(number, path)`` of each segment of a chain, in order."""
    found: list[tuple[int, Path]] = []
    root = Path(origin_dir)
    if not root.is_dir():
        return found
    for path in root.iterdir():
        stem = path.name.removesuffix(SEGMENT_SUFFIX)
        if path.name.endswith(SEGMENT_SUFFIX) and stem.isdigit() and path.is_file():
            found.append((int(stem), path))
    found.sort()
    return found


def all_segments(directory: str | os.PathLike[str]) -> list[tuple[str, Path]]:
    """``(origin, path)`` of every segment under a journal directory, chain by chain, each in order."""
    root = Path(directory)
    return [(origin, path) for origin in list_origins(root) for _, path in segments(root / origin)]


def read_lines(origin_dir: str | os.PathLike[str], start: Position = Position()) -> Iterator[Line]:
    """The lines of a chain from ``start`` on, streaming (memory bounded by the longest line)."""
    for number, path in segments(origin_dir):
        if number < start.segment:
            continue
        offset = start.offset if number == start.segment else 0
        try:
            fh = path.open("rb")
        except OSError:
            continue
        with fh:
            fh.seek(offset)
            pending = b""
            while True:
                chunk = fh.read(_CHUNK)
                if not chunk:
                    break
                pending += chunk
                begin = 0
                while (newline := pending.find(b"\n", begin)) >= 0:
                    data = pending[begin : newline + 1]
                    yield Line(data, Position(number, offset), Position(number, offset + len(data)))
                    offset += len(data)
                    begin = newline + 1
                pending = pending[begin:]
            if pending:
                yield Line(pending, Position(number, offset), Position(number, offset + len(pending)), torn=True)


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
