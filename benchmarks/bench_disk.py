"""Capture latency beside another program writing to the same disk (issue 49, target 2).

    python benchmarks/bench_disk.py [--calls 400] [--rounds 3] [--noise-mib 1024] [--root DIR]

The real ``anthropic`` SDK's ``create`` against replies recorded from the built-in simulator (in-process
transport, 8 KiB of new reasoning per call, a new conversation per call), instrumented by loom-otel with
the file store (``fsync`` on, the default) and the journal beside it under ``--root``, at durability
``batch`` (the default) and ``always``. Each is measured with the disk quiet and with a writer process
writing ``--noise-mib`` MiB to a file on the same file system (1 MiB writes, then ``fsync``, over and
over, until the calls end), interleaved per round. Per variant: the calls' latency p50 and p99 (every
call of every round), and per durability how far the writer moves the p99 (target: under 1 ms for
``batch``: no calling thread waits on a device flush, and loom-otel flushes only its own files;
``always`` flushes before each call returns, so its cost is stated beside it). The control: the same
program writing to a memory file system (``/dev/shm``: no disk, its ``fsync`` does nothing), so what it
moves is its processor time alone (a 2-core machine runs it beside the calls).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Final

import anthropic
import bench_anthropic
from _overhead import provider, remove, replayed, store_root

from loom_otel.core import FileReasoningStore, LoomOtelWarning, ReasoningConfig, force_flush
from loom_otel.core._evidence._journal._writer import Durability
from loom_otel.core._runtime._config import reset_runtime
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor

_WRITER = """
import os, sys
path, mib = sys.argv[1], int(sys.argv[2])
chunk = os.urandom(1 << 20)
print("writing", flush=True)
while True:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for _ in range(mib):
        os.write(fd, chunk)
    os.fsync(fd)
    os.close(fd)
"""
"""The other program: writes ``mib`` MiB to ``path`` and syncs it, over and over, until it is stopped."""

_DURABILITIES: tuple[Durability, ...] = ("batch", "always")
_NOISES = ("quiet", "writer", "memory")
_MEMORY: Final = Path("/dev/shm")
"""A memory file system, where the control writes (``memory``); without one the control is not run."""


def _latencies(client: anthropic.Anthropic, root: Path, durability: Durability, calls: int) -> list[float]:
    """Each call's wall time (seconds), loom-otel instrumenting with ``durability``; its own store and journal."""
    reset_runtime()
    config = ReasoningConfig(
        store=FileReasoningStore(root / f"store-{durability}"),
        journal=root / f"journal-{durability}",
        journal_durability=durability,
    )
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=provider(), config=config)
    try:
        for _ in range(min(20, calls)):  # the store's pool, the journal's segment, the SDK's connection
            client.messages.create(**bench_anthropic.REQUEST)
        force_flush()
        found = []
        for _ in range(calls):
            started = time.perf_counter()
            client.messages.create(**bench_anthropic.REQUEST)
            found.append(time.perf_counter() - started)
        force_flush()
        return found
    finally:
        instrumentor.uninstrument()
        if isinstance(config.store, FileReasoningStore):
            config.store.close()


def _writes_to(root: Path, noise: str) -> Path | None:
    """Where the other program writes for ``noise`` (``None``: nothing runs beside the calls)."""
    if noise == "writer":
        return root / "other-program.bin"
    if noise == "memory":
        return _MEMORY / f"loom-bench-other-program-{os.getpid()}.bin"
    return None


def _with_writer(path: Path, mib: int) -> subprocess.Popen[str]:
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(mib)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    writer.stdout.readline()  # it has started writing
    time.sleep(0.2)  # dirty pages are building up
    return writer


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--noise-mib", type=int, default=1024)
    parser.add_argument("--root", type=Path, default=None)
    args = parser.parse_args()
    args.transport = "memory"
    warnings.simplefilter("ignore", LoomOtelWarning)
    root = store_root(args)
    found: dict[tuple[str, str], list[float]] = {}
    try:
        with replayed(args) as (url, transport):
            client = bench_anthropic.client_of(url, transport)
            noises = [n for n in _NOISES if n != "memory" or (_MEMORY.is_dir() and os.access(_MEMORY, os.W_OK))]
            for round_ in range(args.rounds):
                turn = round_ % len(noises)
                for noise in noises[turn:] + noises[:turn]:
                    path = _writes_to(root, noise)
                    writer = _with_writer(path, args.noise_mib) if path is not None else None
                    try:
                        for durability in _DURABILITIES:
                            found.setdefault((durability, noise), []).extend(
                                _latencies(client, root, durability, args.calls)
                            )
                    finally:
                        if writer is not None:
                            writer.terminate()
                            writer.wait()
                        if path is not None:
                            path.unlink(missing_ok=True)
    finally:
        remove(root)
    _report(args, found)


def _p99_moved(found: dict[tuple[str, str], list[float]], durability: str, noise: str) -> float:
    """How far ``noise`` moved the p99 of ``durability``'s calls from the quiet disk's (seconds)."""
    return _percentile(found[(durability, noise)], 0.99) - _percentile(found[(durability, "quiet")], 0.99)


def _report(args: argparse.Namespace, found: dict[tuple[str, str], list[float]]) -> None:
    print(
        f"anthropic {anthropic.__version__}, create, 8 KiB new reasoning per call, memory transport, file store "
        f"with fsync; {args.calls} calls x {args.rounds} rounds; other program: {args.noise_mib} MiB written and "
        "synced over and over on the same file system (memory: the same program writing to a memory file system)"
    )
    print(f"{'durability':11} {'disk':7} {'p50 us':>8} {'p99 us':>8} {'mean us':>8}")
    for durability in _DURABILITIES:
        for noise in [n for n in _NOISES if (durability, n) in found]:
            values = found[(durability, noise)]
            p50, p99, mean = (_percentile(values, 0.5), _percentile(values, 0.99), statistics.fmean(values))
            print(f"{durability:11} {noise:7} {p50 * 1e6:8.0f} {p99 * 1e6:8.0f} {mean * 1e6:8.0f}")
    for durability in _DURABILITIES:
        print(f"p99 moved by the other program, {durability}: {_p99_moved(found, durability, 'writer') * 1e6:+.0f} us")
    if (_DURABILITIES[0], "memory") not in found:
        print(f"no memory file system at {_MEMORY}: the control (the writer's processor time alone) was not run")
    else:
        for durability in _DURABILITIES:
            moved = _p99_moved(found, durability, "memory")
            print(f"p99 moved by the same program writing to memory (no disk), {durability}: {moved * 1e6:+.0f} us")
    quiet = {d: _percentile(found[(d, "quiet")], 0.5) for d in _DURABILITIES}
    print(f"always costs over batch (p50, quiet disk): {(quiet['always'] - quiet['batch']) * 1e6:+.0f} us a call")


if __name__ == "__main__":
    main()
