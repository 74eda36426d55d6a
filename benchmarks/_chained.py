"""A chained journal written straight to disk for the read-side benchmarks (``bench_read.py``,
``bench_serve.py``): capture records as the journal writes them (``v``, ``origin``, ``seq``, ``prev``,
``hash``), in segments of ``segment`` lines, without a model call per record."""

from __future__ import annotations

import time
from pathlib import Path
from types import TracebackType
from typing import IO

from loom_otel.core._evidence._canonical import GENESIS, canonical_json, chain_hash

__all__ = ["ChainedCaptures"]


class ChainedCaptures:
    """``with ChainedCaptures(journal, origin, segment) as chain: chain.append(attributes)``."""

    def __init__(self, journal: Path, origin: str, segment: int) -> None:
        self._chain = journal / origin
        self._chain.mkdir(parents=True)
        self._origin, self._segment = origin, segment
        self._head, self._seq, self._base_time = GENESIS, 0, time.time_ns()
        self._fh: IO[bytes] | None = None

    def append(self, attributes: dict[str, object]) -> None:
        """One capture record with these span-event attributes, chained to the one before."""
        if self._seq % self._segment == 0:
            self.close()
            self._fh = (self._chain / f"{self._seq // self._segment + 1:08d}.jsonl").open("wb")
        record: dict[str, object] = {
            "v": 1,
            "origin": self._origin,
            "seq": self._seq + 1,
            "prev": self._head,
            "time": self._base_time + self._seq,
            "type": "capture",
            "attributes": attributes,
        }
        self._head = chain_hash(self._head, canonical_json(record))
        record["hash"] = self._head
        assert self._fh is not None
        self._fh.write(canonical_json(record) + b"\n")
        self._seq += 1

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> ChainedCaptures:
        return self

    def __exit__(self, *exc_info: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()
