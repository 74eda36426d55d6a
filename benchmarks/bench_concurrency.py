"""Throughput under concurrency: 64 async calls in flight, and 16 threads, bare vs the official
instrumentation vs loom-otel's default, in one interleaved run (issues 32 and 49).

Targets (issue 49): with 16 threads, loom-otel's ratio to bare is at least 0.95 of the official
instrumentation's (``of official``) on ``threads create`` and ``threads generate``; with 64 async streams
in flight on one loop, at least the official instrumentation's, and no call waits on a loom-otel lock
for more than 1 ms (``longest wait``, ``waits > 1 ms``).

    python benchmarks/bench_concurrency.py [--calls 640] [--rounds 3] [--transport socket|memory]
                                           [--tasks 64] [--threads 16] [--only threads]

Workloads (8 KiB of new reasoning per reply, ``_replay.py``): ``async create`` (Anthropic
``AsyncAnthropic.messages.create``), ``async stream`` (the same with ``stream=True``, iterated),
``async generate`` and ``async gemini stream`` (``client.aio.models.generate_content(_stream)``), each
``--tasks`` calls at a time on one event loop; ``threads create`` and ``threads generate``: the sync calls
from ``--threads`` threads sharing one client. The transport defaults to ``socket`` (the replay server
in its own process, the SDKs' real HTTP transport), so the calls wait on real sockets as they would on a
vendor.

Variants: the official instrumentations with util-genai's upload hook (files, every upload waited for
before the batch ends: the comparison issue 32 accepted for a single call, which also keeps the text),
the official instrumentations (no content), loom-otel's default.

Figures per workload and variant: calls per second (the median of the rounds), its ratio to ``bare``
measured right before it in the same round; ``of official``: that ratio over the official
instrumentation's in the same round (``of upload``: over the upload hook's); and, for loom-otel, how long
a call waited on each of loom-otel's locks on the call path (the journal's, the store's, the binding
records'), summed over the batch and divided by the calls (a lock that serializes the callers shows as
wait), the longest single wait, how many waits took over 1 ms and how many times a lock was held over 1
ms (long waits beside short holds are the interpreter lock: the thread a lock was handed to waits for its
turn to run; the locks are wrapped here, in the benchmark only, to time each acquisition); and the CPU
time loom-otel's own background threads (group commit, checkpoints, ready packs) spent per call.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import threading
import time
import warnings
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anthropic
import bench_anthropic
import bench_gemini
import httpx2
from _overhead import Variant, loom_variants, official_variant, provider, remove, replayed, store_root
from bench_peers import _Both
from google import genai
from google.genai import types

from loom_otel.core import LoomOtelWarning, force_flush
from loom_otel.core._continuation import _bindings
from loom_otel.core._evidence._journal import _writer
from loom_otel.core._evidence._store import _file

_waits: dict[str, float] = {}
"""How long the calling threads waited on each lock (by label) since the last ``_clear_waits()``."""
_longest: dict[str, float] = {}
"""The longest single wait on each lock (by label) since the last ``_clear_waits()``."""
_slow_waits: dict[str, int] = {}
"""How many waits on each lock (by label) took longer than ``_SLOW_WAIT`` since the last ``_clear_waits()``."""
_long_holds: dict[str, int] = {}
"""How many times each lock (by label) was held longer than ``_SLOW_WAIT`` since the last ``_clear_waits()``.
A wait long beside holds short is the interpreter lock: a thread the lock was handed to waits to run."""
OFFICIAL = "official OTel (no content)"
_SLOW_WAIT = 0.001


def _clear_waits() -> None:
    _waits.clear()
    _longest.clear()
    _slow_waits.clear()
    _long_holds.clear()


class _WaitingLock:
    """A lock that adds how long each acquisition by a calling thread (not one of loom-otel's own
    background threads) waited to ``_waits[label]``."""

    def __init__(self, inner: Any, label: str) -> None:
        self._inner, self._label = inner, label
        self._since = 0.0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._inner.acquire(False):
            self._since = time.perf_counter()
            return True
        started = time.perf_counter()
        got: bool = self._inner.acquire(blocking, timeout)
        self._since = time.perf_counter()
        if not threading.current_thread().name.startswith("loom-otel"):
            waited = time.perf_counter() - started
            _waits[self._label] = _waits.get(self._label, 0.0) + waited
            _longest[self._label] = max(_longest.get(self._label, 0.0), waited)
            if waited > _SLOW_WAIT:
                _slow_waits[self._label] = _slow_waits.get(self._label, 0) + 1
        return got

    def release(self) -> None:
        held = time.perf_counter() - self._since
        if held > _SLOW_WAIT:
            _long_holds[self._label] = _long_holds.get(self._label, 0) + 1
        self._inner.release()

    def locked(self) -> bool:
        locked: bool = self._inner.locked()
        return locked

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def _watch_locks() -> None:
    """Put a waiting lock in place of each live journal's, store's and binding records' lock."""
    for journal in _writer.live_journals():
        if not isinstance(journal._lock, _WaitingLock):
            journal._lock = _WaitingLock(journal._lock, "journal")  # type: ignore[assignment]
    for store in list(_file._writers):
        if not isinstance(store._lock, _WaitingLock):
            store._lock = _WaitingLock(store._lock, "store")  # type: ignore[assignment]
    for bindings in list(_bindings._registry.values()):
        if not isinstance(bindings._lock, _WaitingLock):
            bindings._lock = _WaitingLock(bindings._lock, "binding records")  # type: ignore[assignment]


def _thread_cpu() -> dict[str, float]:
    """CPU seconds of each of this process's threads named ``loom-otel-*``, by name (summed)."""
    names = {t.native_id: t.name for t in threading.enumerate() if t.name.startswith("loom-otel")}
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[str, float] = {}
    for tid, name in names.items():
        try:
            with open(f"/proc/self/task/{tid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[name] = found.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return found


Batch = Callable[[int], None]
"""Runs ``n`` calls (concurrently, as the workload does)."""


_LOOP = asyncio.new_event_loop()
"""One event loop for the run: an async client's connections belong to the loop that opened them."""


def _async_batch(make: Callable[[], Awaitable[Any]], tasks: int) -> Batch:
    def batch(n: int) -> None:
        async def run() -> None:
            limit = asyncio.Semaphore(tasks)

            async def one() -> None:
                async with limit:
                    await make()

            await asyncio.gather(*(one() for _ in range(n)))

        _LOOP.run_until_complete(run())

    return batch


def _thread_batch(call: Callable[[], Any], threads: int) -> Batch:
    def batch(n: int) -> None:
        with ThreadPoolExecutor(threads) as pool:
            for future in [pool.submit(call) for _ in range(n)]:
                future.result()

    return batch


def workloads(
    url: str | None, transport: httpx2.BaseTransport | None, args: argparse.Namespace
) -> list[tuple[str, Batch]]:
    request, model, config = bench_anthropic.REQUEST, bench_gemini.MODEL, bench_gemini.CONFIG
    limits = httpx2.Limits(max_connections=args.tasks * 2, max_keepalive_connections=args.tasks * 2)
    common: dict[str, Any] = {
        "api_key": "bench",
        "base_url": url or "https://api.anthropic.bench",
        "max_retries": 0,
        "open_telemetry": False,
    }
    claude_async = anthropic.AsyncAnthropic(
        **common, http_client=httpx2.AsyncClient(transport=transport, limits=limits)
    )
    claude = anthropic.Anthropic(**common, http_client=httpx2.Client(transport=transport, limits=limits))
    options: dict[str, Any] = {"limits": limits} if transport is None else {"transport": transport}
    gemini = genai.Client(
        api_key="bench",
        http_options=types.HttpOptions(
            base_url=url or "https://generativelanguage.bench", client_args=options, async_client_args=options
        ),
    )

    async def async_create() -> Any:
        return await claude_async.messages.create(**request)

    async def async_stream() -> None:
        async with await claude_async.messages.create(stream=True, **request) as events:
            async for _ in events:
                pass

    async def async_generate() -> Any:
        return await gemini.aio.models.generate_content(model=model, contents="Plan the trip.", config=config)

    async def async_gemini_stream() -> None:
        chunks = await gemini.aio.models.generate_content_stream(model=model, contents="Plan the trip.", config=config)
        async for _ in chunks:
            pass

    def create() -> Any:
        return claude.messages.create(**request)

    def generate() -> Any:
        return gemini.models.generate_content(model=model, contents="Plan the trip.", config=config)

    tasks, threads = args.tasks, args.threads
    return [
        (f"async create x{tasks}", _async_batch(async_create, tasks)),
        (f"async stream x{tasks}", _async_batch(async_stream, tasks)),
        (f"async generate x{tasks}", _async_batch(async_generate, tasks)),
        (f"async gemini stream x{tasks}", _async_batch(async_gemini_stream, tasks)),
        (f"threads create x{threads}", _thread_batch(create, threads)),
        (f"threads generate x{threads}", _thread_batch(generate, threads)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=640)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transport", choices=("memory", "socket"), default="socket")
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--root", type=Path, default=None)
    parser.add_argument("--only", default="", help="run only the workloads whose name contains this")
    args = parser.parse_args()
    warnings.simplefilter("ignore", LoomOtelWarning)
    root = store_root(args)
    officials = [bench_anthropic.official(), bench_gemini.official()]
    loom = loom_variants(_Both, root)[0]
    variants: list[Variant] = [Variant("loom-otel default", loom.instrument)]
    drops = None
    if all(officials):
        from bench_peers import _both, _upload_variant

        upload, drops = _upload_variant(officials, root, args.calls)  # each batch waits for its uploads
        variants = [*upload, *_both(OFFICIAL, officials), *variants]
    else:
        variants = [*official_variant(None, ""), *variants]
    providers = {v.name: provider() for v in variants}
    # (workload, variant) -> per round: (bare calls/s, variant calls/s, lock waits, background CPU)
    results: dict[tuple[str, str], list[tuple[float, float, dict[str, float], dict[str, float]]]] = {}
    # (workload, variant) -> per round: (longest wait on any lock, waits over 1 ms, holds over 1 ms)
    longest: dict[tuple[str, str], list[tuple[float, int, int]]] = {}
    try:
        with replayed(args) as (url, transport):
            found = [(name, batch) for name, batch in workloads(url, transport, args) if args.only in name]
            for _, batch in found:
                batch(args.tasks)  # warm up
            for round_ in range(args.rounds):
                order = variants[round_ % len(variants) :] + variants[: round_ % len(variants)]
                for name, batch in found:
                    for variant in order:
                        bare = _throughput(batch, args.calls, force_flush)
                        undo = variant.instrument(providers[variant.name])
                        settle = variant.settle or force_flush
                        try:
                            batch(args.tasks)  # the variant's first calls open its journal and store
                            settle()
                            _watch_locks()
                            _clear_waits()
                            before = _thread_cpu()
                            measured = _throughput(batch, args.calls, settle)
                            after = _thread_cpu()
                            waits = dict(_waits)
                            worst = (
                                max(_longest.values(), default=0.0),
                                sum(_slow_waits.values()),
                                sum(_long_holds.values()),
                            )
                        finally:
                            undo()
                        background = {k: v - before.get(k, 0.0) for k, v in after.items()}
                        results.setdefault((name, variant.name), []).append((bare, measured, waits, background))
                        longest.setdefault((name, variant.name), []).append(worst)
    finally:
        for each in providers.values():
            each.shutdown()
        remove(root)
    _report(args, [name for name, _ in found], variants, results, longest)
    if drops is not None and drops.count:
        print(f"the upload hook dropped {drops.count} uploads (its queue was full)")


def _throughput(batch: Batch, calls: int, settle: Callable[[], object]) -> float:
    """Calls per second of ``calls`` calls, until ``settle`` returns (what each variant waits for after a
    batch: loom-otel's ``force_flush``, the upload hook's uploads)."""
    started = time.perf_counter()
    batch(calls)
    settle()
    return calls / (time.perf_counter() - started)


def _report(
    args: argparse.Namespace,
    names: list[str],
    variants: list[Variant],
    results: dict[tuple[str, str], list[tuple[float, float, dict[str, float], dict[str, float]]]],
    longest: dict[tuple[str, str], list[tuple[float, int, int]]],
) -> None:
    med = statistics.median
    official = OFFICIAL if any(v.name == OFFICIAL for v in variants) else None
    upload = next((v.name for v in variants if not v.loom and v.settle is not None), None)

    def over(workload: str, variant: str, other: str | None) -> str:
        """``variant``'s ratio to bare over ``other``'s on ``workload``, in the same rounds (median)."""
        if other is None or variant == other:
            return "-"
        pairs = zip(results[(workload, variant)], results[(workload, other)], strict=True)
        return f"{med((m / b) / (om / ob) for (b, m, _, _), (ob, om, _, _) in pairs):.2f}"

    print(
        f"anthropic {anthropic.__version__}, google-genai {genai.__version__}, 8 KiB new reasoning per call, "
        f"{args.transport} transport, {args.calls} calls x {args.rounds} rounds, interleaved"
    )
    print(
        "calls/s = median of the rounds; ratio = to bare in the same round; of official = that ratio over the "
        "official instrumentation's in the same round (of upload: over the official upload hook's, which also "
        "keeps the text before the batch ends); lock wait and background CPU per call; longest single "
        "lock wait (worst round), waits and holds over 1 ms (all rounds): a wait long beside holds short is the "
        "interpreter lock (the thread handed the lock waits to run), not the lock"
    )
    print(
        f"{'workload':26} {'variant':40} {'calls/s':>8} {'ratio':>6} {'of official':>11} {'of upload':>9} "
        f"{'lock wait us':>13} {'bg cpu us':>10} {'longest wait ms':>15} {'waits > 1 ms':>12} {'holds > 1 ms':>12}"
    )
    for name in names:
        bare = med(b for v in variants for b, _, _, _ in results[(name, v.name)])
        print(f"{name:26} {'bare':40} {bare:8.0f} {1.0:6.2f}")
        for variant in variants:
            rounds = results[(name, variant.name)]
            rate = med(m for _, m, _, _ in rounds)
            ratio = med(m / b for b, m, _, _ in rounds)
            waited = med(sum(w.values()) for _, _, w, _ in rounds) / args.calls * 1e6
            background = med(sum(c.values()) for _, _, _, c in rounds) / args.calls * 1e6
            detail = ", ".join(
                f"{label} {med(w.get(label, 0.0) for _, _, w, _ in rounds) / args.calls * 1e6:.1f}"
                for label in sorted({k for _, _, w, _ in rounds for k in w})
            )
            of_official = over(name, variant.name, official) if variant.loom else "-"
            of_upload = over(name, variant.name, upload) if variant.loom else "-"
            worst = max(w for w, _, _ in longest[(name, variant.name)]) * 1e3
            slow = sum(n for _, n, _ in longest[(name, variant.name)])
            held = sum(h for _, _, h in longest[(name, variant.name)])
            print(
                f"{name:26} {variant.name:40} {rate:8.0f} {ratio:6.2f} {of_official:>11} {of_upload:>9} {waited:13.1f} "
                f"{background:10.1f} {worst:15.2f} {slow:12d} {held:12d}  {detail}"
            )


if __name__ == "__main__":
    main()
