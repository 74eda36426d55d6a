"""``loom-otel serve`` under load: concurrent readers of ``--workers`` workers over a large journal.

    python benchmarks/bench_serve.py [--captures 100000] [--readers 50] [--seconds 60] [--workers 2]
                                     [--threads N] [--dir DIR]

A journal of ``--captures`` capture records (real chained records written directly as lines: no model
calls), 100 per execution (tenant ``acme``, principal ``alice``), one text part each whose blob is in a
file store. ``loom-otel serve`` runs as a user starts it (a uvicorn subprocess, ``--workers`` workers, a
tokens file, its capture index in a cache directory of the run's own; ``--threads``: its reading threads
per worker, default serve's own); ``--readers`` concurrent clients read, for ``--seconds``, alternately a
part (``/api/executions/{id}?step=..``: one step's one part) and an execution page (``/executions/{id}``:
the HTML page of its first 100 parts). Every read is recorded (a ``read`` record per part), as in
production.

Reported: generation time; the first start's time to its first page (the capture index built);
reads per second and p50 / p99 latency of each kind; the resident memory of each worker after the
reads; then a restart over the same captures (the persisted index reused) and its time to the first
page.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
from _chained import ChainedCaptures

from loom_otel.core import Envelope, FileReasoningStore

PER_EXECUTION = 100
SEGMENT = 100_000
TOKEN = "bench-reader-token-0123456789abcdef"


def generate(journal: Path, captures: int, store: FileReasoningStore) -> int:
    with ChainedCaptures(journal, "bench-serve-host-000000000000", SEGMENT) as chain:
        for n in range(captures):
            execution_id = f"exec-{n // PER_EXECUTION:06d}"
            text = f"reasoning of capture {n}: " + "r" * 400
            envelope = Envelope.seal(text, execution_id=execution_id, tenant="acme", principal="alice")
            store.put(envelope)
            chain.append(
                {
                    "gen_ai.provider.name": "anthropic",
                    "gen_ai.request.model": "claude-bench",
                    "gen_ai.response.model": "claude-bench",
                    "loom.attempt": 1,
                    "loom.execution.id": execution_id,
                    "loom.step.id": f"s{n % PER_EXECUTION:03d}",
                    "loom.tenant": "acme",
                    "loom.principal": "alice",
                    "loom.reasoning.part.kind": ["text"],
                    "loom.reasoning.part.ref": [envelope.ref],
                    "loom.reasoning.part.digest": [envelope.digest],
                    "loom.reasoning.part.size": [envelope.size],
                    "loom.reasoning.part.omitted": [False],
                }
            )
    return max(1, captures // PER_EXECUTION)


def resident_kib(pid: int) -> int:
    """The resident memory of process ``pid`` (``VmRSS``, KiB; 0 when it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    line = next((line for line in status.splitlines() if line.startswith("VmRSS:")), "VmRSS: 0 kB")
    return int(line.split()[1])


def workers_of(pid: int) -> list[int]:
    """The worker processes of the server ``pid`` (its children started by ``multiprocessing``'s spawn,
    not its resource tracker; itself when it has none: one worker)."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            children += [int(child) for child in task.read_text().split()]
    workers = []
    for child in children:
        with contextlib.suppress(OSError):
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                workers.append(child)
    return workers or [pid]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def read_for(base: str, executions: int, readers: int, seconds: float) -> dict[str, list[float]]:
    latencies: dict[str, list[float]] = {"part": [], "page": []}
    errors = 0
    deadline = time.monotonic() + seconds
    headers = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx2.Limits(max_connections=readers, max_keepalive_connections=readers)

    async def reader(client: httpx2.AsyncClient, n: int) -> None:
        nonlocal errors
        rng = random.Random(n)
        kind = "part" if n % 2 == 0 else "page"
        while time.monotonic() < deadline:
            execution = f"exec-{rng.randrange(executions):06d}"
            if kind == "part":
                path = f"/api/executions/{execution}?tenant=acme&step=s{rng.randrange(PER_EXECUTION):03d}"
            else:
                path = f"/executions/{execution}?tenant=acme"
            started = time.perf_counter()
            response = await client.get(path, headers=headers)
            latencies[kind].append(time.perf_counter() - started)
            errors += response.status_code != 200
            kind = "page" if kind == "part" else "part"

    async with httpx2.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        await asyncio.gather(*(reader(client, n) for n in range(readers)))
    if errors:
        raise SystemExit(f"{errors} reads did not answer 200")
    return latencies


class Serving:
    """``loom-otel serve`` over the run's journal and store, as a user starts it, until ``stop``."""

    def __init__(self, root: Path, journal: Path, store_dir: Path, workers: int, threads: int | None) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        command = [
            sys.executable, "-m", "loom_otel.cli", "serve", "--journal", str(journal), "--store",
            f"file://{store_dir}", "--tokens", str(root / "tokens.toml"), "--port", str(self.port),
            "--workers", str(workers), "--reads-journal", str(root / "reads"),
            *(["--threads", str(threads)] if threads else []),
        ]  # fmt: skip
        environment = {**os.environ, "XDG_CACHE_HOME": str(root / "cache")}  # the index: the run's own
        self.started = time.perf_counter()
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=environment)

    def first_page(self) -> tuple[float, float]:
        """Seconds from the start to the first list page answered (the index brought up to date), then
        to the first execution page."""
        deadline = time.monotonic() + 600
        headers = {"Authorization": f"Bearer {TOKEN}"}
        while True:
            try:
                listed = httpx2.get(f"{self.base}/", headers=headers, timeout=600)
                break
            except httpx2.TransportError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise SystemExit("loom-otel serve did not start") from None
                time.sleep(0.05)
        assert listed.status_code == 200, listed.text
        at = time.perf_counter() - self.started
        page = httpx2.get(f"{self.base}/executions/exec-000000?tenant=acme", headers=headers, timeout=600)
        assert page.status_code == 200, page.text
        return at, time.perf_counter() - self.started

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--captures", type=int, default=100_000)
    parser.add_argument("--readers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="reading threads per worker (default: serve's)")
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: a temporary one, removed)")
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="loom-bench-serve-"))
    try:
        journal, store_dir = root / "journal", root / "store"
        started = time.perf_counter()
        executions = generate(journal, args.captures, FileReasoningStore(store_dir, fsync=False))
        print(f"journal: {args.captures:,} captures in {executions:,} executions, written in "
              f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        (root / "tokens.toml").write_text(f'[tokens]\nalice = "{TOKEN}"\n')
        server = Serving(root, journal, store_dir, args.workers, args.threads)
        try:
            listed, page = server.first_page()
            print(f"first start (the capture index built): list page in {listed:.1f} s, execution page {page:.1f} s")
            latencies = asyncio.run(read_for(server.base, executions, args.readers, args.seconds))
            resident = [resident_kib(pid) for pid in workers_of(server.process.pid)]
        finally:
            server.stop()
        total = sum(len(v) for v in latencies.values())
        print(
            f"{args.readers} readers, {args.seconds:g} s, {args.workers} workers: {total / args.seconds:,.1f} reads/s"
        )
        for kind, label in (
            ("part", "part  (one step, one part, JSON)"),
            ("page", "page  (execution, 100 parts, HTML)"),
        ):
            values = latencies[kind]
            print(f"{label:38} {len(values):7,} reads  p50 {percentile(values, 0.5) * 1e3:8.1f} ms  "
                  f"p99 {percentile(values, 0.99) * 1e3:8.1f} ms")  # fmt: skip
        print(f"resident memory per worker: {', '.join(f'{kib / 1024:.0f} MiB' for kib in resident)}")
        server = Serving(root, journal, store_dir, args.workers, args.threads)
        try:
            listed, page = server.first_page()
            print(f"restart over {args.captures:,} captures: list page in {listed:.1f} s, execution page {page:.1f} s")
        finally:
            server.stop()
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
