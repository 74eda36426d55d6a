"""The local audit journal: append-only JSON lines, one hash chain per writer process (``origin``).

Layout: ``<directory>/<origin>/<segment:08d>.jsonl``. Each line is the canonical JSON of one record::

    {"v": 1, "origin": ..., "seq": n, "prev": <hash of n-1>, "time": <unix ns>, "type": "capture",
     "attributes": {...}, "hash": SHA-256(prev || canonical(record without "hash"))}

The record's ``attributes`` are exactly the span event's attributes minus the chain fields, so a
record can be rebuilt from an exported event and its hash checked.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from loom_otel.core._canonical import GENESIS, canonical_json, chain_hash

__all__ = [
    "Durability",
    "Journal",
    "JournalEntry",
    "iter_records",
    "open_journal",
    "record_body",
]

Durability = Literal["always", "batch", "os"]
AttributeValue = str | bool | int | float | Sequence[str] | Sequence[bool] | Sequence[int] | Sequence[float]

RECORD_VERSION: Final = 1
SEGMENT_RECORDS: Final = 100_000


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """Where a record landed in the chain: the fields a span event carries as ``loom.audit.*``."""

    origin: str
    seq: int
    prev: str
    hash: str
    time: int


def record_body(record: Mapping[str, object]) -> bytes:
    """The canonical bytes a record's hash covers (the record without its ``hash``)."""
    return canonical_json({k: v for k, v in record.items() if k != "hash"})


def _new_origin() -> str:
    return f"{os.uname().nodename[:24]}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


class Journal:
    """One writer's chain in ``directory``. Thread-safe; every append is written before it returns."""

    def __init__(self, directory: str | os.PathLike[str], *, durability: Durability = "batch") -> None:
        self.directory = Path(directory).expanduser().absolute()
        self.durability: Durability = durability
        self._lock = threading.Lock()
        self._fd = -1
        self._start_chain()

    def _start_chain(self) -> None:
        self.origin = _new_origin()
        self._seq = 0
        self._head = GENESIS
        self._segment = 0
        self._in_segment = 0
        self._fd = -1
        self._last_sync = 0.0

    def _open_segment(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._segment += 1
        self._in_segment = 0
        chain_dir = self.directory / self.origin
        chain_dir.mkdir(parents=True, exist_ok=True)
        path = chain_dir / f"{self._segment:08d}.jsonl"
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def append(self, type_: str, attributes: Mapping[str, AttributeValue]) -> JournalEntry:
        """Append one record; raises ``OSError`` when it cannot be written (callers fail closed)."""
        with self._lock:
            if self._fd < 0 or self._in_segment >= SEGMENT_RECORDS:
                self._open_segment()
            seq = self._seq + 1
            record: dict[str, object] = {
                "v": RECORD_VERSION,
                "origin": self.origin,
                "seq": seq,
                "prev": self._head,
                "time": time.time_ns(),
                "type": type_,
                "attributes": {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in attributes.items()},
            }
            digest = chain_hash(self._head, canonical_json(record))
            record["hash"] = digest
            line = canonical_json(record) + b"\n"
            written = os.write(self._fd, line)
            if written != len(line):
                raise OSError(f"short write to the audit journal ({written} of {len(line)} bytes)")
            self._sync()
            self._seq, self._head = seq, digest
            self._in_segment += 1
            return JournalEntry(self.origin, seq, str(record["prev"]), digest, int(str(record["time"])))

    def _sync(self) -> None:
        if self.durability == "always":
            os.fsync(self._fd)
        elif self.durability == "batch":
            now = time.monotonic()
            if now - self._last_sync >= 0.005:
                os.fsync(self._fd)
                self._last_sync = now

    @property
    def head(self) -> tuple[int, str]:
        with self._lock:
            return self._seq, self._head

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.fsync(self._fd)
                os.close(self._fd)
                self._fd = -1


_journals: dict[Path, Journal] = {}
_journals_lock = threading.Lock()


def open_journal(directory: str | os.PathLike[str], *, durability: Durability = "batch") -> Journal:
    """The process's one journal for ``directory`` (one chain per writer process)."""
    key = Path(directory).expanduser().absolute()
    with _journals_lock:
        journal = _journals.get(key)
        if journal is None:
            journal = _journals[key] = Journal(key, durability=durability)
        return journal


def iter_records(directory: str | os.PathLike[str]) -> Iterator[dict[str, object]]:
    """Every parseable record under ``directory``, chain by chain, in file order."""
    root = Path(directory)
    if not root.is_dir():
        return
    for chain_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for segment in sorted(chain_dir.glob("*.jsonl")):
            with segment.open("rb") as fh:
                for line in fh:
                    if not line.endswith(b"\n"):
                        break
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(record, dict):
                        yield record
