"""Bounded reads over a large journal: index build time, bounded query latency, store reads touched.

    python benchmarks/bench_read.py [--records 1000000] [--queries 200] [--dir DIR] [--full-scan]

A journal of ``--records`` capture records (real chained records, 100,000 per segment, written
directly as lines: no model calls) spread over 10,000 executions of 100 records each (25 steps x 4
attempts... in turns ``turn-<n>/<phase>``), each record with three parts (text, summary, redacted).
Only the blobs of the queried executions exist (in a file store): every other ref would read as
``erased``, and a counting store shows that none is ever asked for.

Reported: generation time, index build time (first query's refresh), bounded query latency
(median / p95 / max, index already built: exact step and step prefix, ``max_parts=16``), the store
``get`` calls per query against the parts selected, and optionally a full ``read_reasoning`` scan.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _chained import ChainedCaptures

from loom_otel.audit import ReasoningLimits, ReasoningQuery, read_reasoning, read_reasoning_bounded
from loom_otel.audit._index import CaptureIndex, index_path_for
from loom_otel.core import Envelope, FileReasoningStore

SEGMENT = 100_000
PER_EXECUTION = 100
PHASES = ("plan", "act", "check", "reply")


class CountingStore:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.gets = 0

    def put(self, envelope: Any) -> str:
        return str(self.inner.put(envelope))

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        self.gets += 1
        data: bytes | None = self.inner.get(ref, tenant=tenant, execution_id=execution_id)
        return data

    def delete(self, ref: str) -> None:
        self.inner.delete(ref)

    def erase_execution(self, tenant: str | None, execution_id: str) -> int:
        return int(self.inner.erase_execution(tenant, execution_id))


def execution_of(n: int) -> str:
    return f"exec-{n // PER_EXECUTION:06d}"


def step_of(n: int) -> str:
    i = n % PER_EXECUTION
    return f"turn-{i // len(PHASES):03d}/{PHASES[i % len(PHASES)]}"


def texts_of(n: int) -> tuple[str, str]:
    return (f"reasoning of record {n}: " + "t" * 600, f"summary of record {n}: " + "s" * 200)


def generate(journal: Path, records: int, store: FileReasoningStore, stored: set[str]) -> None:
    with ChainedCaptures(journal, "bench-host-1-000000000000", SEGMENT) as chain:
        for n in range(records):
            execution_id = execution_of(n)
            envelopes = [Envelope.seal(t, execution_id=execution_id) for t in texts_of(n)]
            if execution_id in stored:
                for envelope in envelopes:
                    store.put(envelope)
            chain.append(
                {
                    "gen_ai.provider.name": "anthropic",
                    "gen_ai.request.model": "claude-bench",
                    "gen_ai.response.model": "claude-bench-20251101",
                    "loom.attempt": 1,
                    "loom.execution.id": execution_id,
                    "loom.step.id": step_of(n),
                    "loom.reasoning.part.kind": ["text", "summary", "redacted"],
                    "loom.reasoning.part.ref": [envelopes[0].ref, envelopes[1].ref, ""],
                    "loom.reasoning.part.digest": [envelopes[0].digest, envelopes[1].digest, ""],
                    "loom.reasoning.part.size": [envelopes[0].size, envelopes[1].size, 0],
                    "loom.reasoning.part.omitted": [False, False, False],
                }
            )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: a temporary one)")
    parser.add_argument("--full-scan", action="store_true", help="also time an unindexed read_reasoning")
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="loom-bench-read-"))
    journal = root / "journal"
    store = FileReasoningStore(root / "store", fsync=False)
    executions = max(1, args.records // PER_EXECUTION)
    rng = random.Random(7)
    queried = sorted({f"exec-{rng.randrange(executions):06d}" for _ in range(20)})

    started = time.perf_counter()
    generate(journal, args.records, store, set(queried))
    size = sum(p.stat().st_size for p in journal.rglob("*.jsonl"))
    elapsed = time.perf_counter() - started
    print(f"journal: {args.records:,} records, {size / 2**20:,.0f} MiB, written in {elapsed:.1f} s")

    started = time.perf_counter()
    with CaptureIndex(journal) as index:
        index.refresh()
        indexed = len(index)
    build = time.perf_counter() - started
    index_size = index_path_for(journal).stat().st_size
    print(f"index build: {build:.1f} s for {indexed:,} records ({index_size / 2**20:,.0f} MiB, in the private cache)")

    counting = CountingStore(store)
    limits = ReasoningLimits(max_parts=16)
    kinds = {"exact step": [], "step prefix": []}  # type: dict[str, list[float]]
    gets_ok = True
    for q in range(args.queries):
        execution_id = queried[q % len(queried)]
        turn = rng.randrange(PER_EXECUTION // len(PHASES))
        if q % 2 == 0:
            label, query = "exact step", ReasoningQuery(execution_id=execution_id, step_id=f"turn-{turn:03d}/act")
        else:
            label, query = "step prefix", ReasoningQuery(execution_id=execution_id, step_prefix=f"turn-{turn:03d}/")
        counting.gets = 0
        t0 = time.perf_counter()
        reading = read_reasoning_bounded(journal, counting, query, limits)
        kinds[label].append((time.perf_counter() - t0) * 1000)
        selected = sum(1 for p in reading.parts if p.ref)
        gets_ok &= counting.gets == selected and all(p.status == "ok" or not p.ref for p in reading.parts)
    for label, values in kinds.items():
        print(
            f"bounded query ({label}, max_parts=16): median {statistics.median(values):.2f} ms, "
            f"p95 {percentile(values, 0.95):.2f} ms, max {max(values):.2f} ms over {len(values)} queries"
        )
    print(f"store reads: exactly the selected parts' blobs on every query: {gets_ok}")

    if args.full_scan:
        t0 = time.perf_counter()
        reading_full = read_reasoning(journal, store, execution_id=queried[0])
        print(
            f"unindexed read_reasoning of one execution: {time.perf_counter() - t0:.1f} s "
            f"({len(reading_full.parts)} parts)"
        )
    if args.dir is None:
        print(f"(work directory {root}; remove it when done)")
    os.sync()


if __name__ == "__main__":
    main()
