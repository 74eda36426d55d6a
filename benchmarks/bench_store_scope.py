"""The file store's ``put`` for a new execution (a new conversation per call): the calling thread's wall
time per ``put``, interleaved in one process.

Variants: ``shared packs`` (an execution loom-otel named, a new conversation without ``execution()``: the
blob goes to the writer's pack of its shard, no directory is made), ``ready directories`` (a new
``execution()``: its scope directory and pack are renamed into place from the writer's pool) and ``mkdir
on the calling thread`` (a new ``execution()`` with the pool switched off: a ``mkdir`` and an
``open(O_CREAT)`` per new execution, as before the pool). Between two puts the script
does what the rest of a model call would (``--between``): ``cpu`` spins in Python for ``--gap-us``
(the pool's thread then waits for the GIL), ``sleep`` sleeps (an SDK waiting on its socket), ``none``
puts back to back (the pool cannot keep up; it shows the fallback). ``misses`` counts the puts that
found no ready directory. The blobs are sealed before timing; ``fsync`` is the default (syncs happen in
the journal's group commit, not in ``put``).

    python benchmarks/bench_store_scope.py --dir /work/tmpx --calls 2000 --rounds 5
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from loom_otel.core import Envelope, FileReasoningStore


def _gap(kind: str, micros: float) -> Callable[[], None]:
    seconds = micros / 1e6
    if kind == "sleep":
        return lambda: time.sleep(seconds)
    if kind == "cpu":

        def spin() -> None:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                pass

        return spin
    return lambda: None


def _round(root: Path, variant: str, calls: int, gap: Callable[[], None]) -> tuple[list[float], int]:
    store = FileReasoningStore(root)
    misses = [0]
    named = variant != "shared"
    if variant == "ready":
        store.put(Envelope.seal("warm-up", execution_id="warm-up"))
        assert store._pool is not None and store._pool.wait_filled(30)
        make = store._make_dir

        def counted(directory: str) -> bool:
            misses[0] += 1
            return make(directory)

        store._make_dir = counted  # type: ignore[method-assign]
    elif variant == "mkdir":
        store._take_ready = lambda: None  # type: ignore[method-assign]
    else:  # every shard's pack open, as in a process that has run for a while
        for n in range(1000):
            store.put(Envelope.seal("warm-up", execution_id=f"warm-up-{n}", named=False))
    envelopes = [Envelope.seal(f"thinking {n}", execution_id=uuid.uuid4().hex, named=named) for n in range(calls)]
    times = []
    for envelope in envelopes:
        gap()
        started = time.perf_counter()
        store.put(envelope)
        times.append(time.perf_counter() - started)
    store.close()
    return times, misses[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=None, help="where the stores go (default: the temp dir)")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--between", choices=("cpu", "sleep", "none"), default="cpu")
    parser.add_argument("--gap-us", type=float, default=500.0)
    args = parser.parse_args()
    gap = _gap(args.between, args.gap_us)
    base = Path(tempfile.mkdtemp(prefix="bench-store-scope-", dir=args.dir))
    variants = {"shared packs": "shared", "ready directories": "ready", "mkdir on the calling thread": "mkdir"}
    medians: dict[str, list[float]] = {name: [] for name in variants}
    p90s: dict[str, list[float]] = {name: [] for name in variants}
    missed: dict[str, int] = dict.fromkeys(variants, 0)
    try:
        for round_ in range(args.rounds):
            order = list(variants.items())
            if round_ % 2:
                order.reverse()
            for name, variant in order:
                root = base / f"{round_}-{variant}"
                times, misses = _round(root, variant, args.calls, gap)
                medians[name].append(statistics.median(times) * 1e6)
                p90s[name].append(statistics.quantiles(times, n=10)[-1] * 1e6)
                missed[name] += misses
                shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    between = f"{args.between} {args.gap_us:g} us"
    print(f"put of a new execution, {args.calls} calls x {args.rounds} rounds, between: {between}")
    print(f"{'variant':<30} {'median us':>10} {'p90 us':>8} {'misses':>8}   per-round medians")
    for name, variant in variants.items():
        rounds = " ".join(f"{m:.1f}" for m in medians[name])
        print(
            f"{name:<30} {statistics.median(medians[name]):>10.1f} {statistics.median(p90s[name]):>8.1f} "
            f"{missed[name] if variant == 'ready' else '-':>8}   {rounds}"
        )


if __name__ == "__main__":
    main()
