"""``loom-otel serve`` under load: concurrent readers of one worker over a large journal.

    python benchmarks/bench_serve.py [--captures 100000] [--readers 50] [--seconds 60] [--dir DIR]

A journal of ``--captures`` capture records (real chained records written directly as lines: no model
calls), 100 per execution (tenant ``acme``, principal ``alice``), one text part each whose blob is in a
file store. ``loom-otel serve`` runs as a user starts it (a uvicorn subprocess, one worker, a tokens
file); ``--readers`` concurrent clients read, for ``--seconds``, alternately a part (``/api/executions/
{id}?step=..``: one step's one part) and an execution page (``/executions/{id}``: the HTML page of its
first 100 parts). Every read is recorded (a ``read`` record per part), as in production.

Reported: generation and index build time, reads per second, and p50 / p99 latency of each kind.
"""

from __future__ import annotations

import argparse
import asyncio
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--captures", type=int, default=100_000)
    parser.add_argument("--readers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
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
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        command = [
            sys.executable, "-m", "loom_otel.cli", "serve", "--journal", str(journal), "--store",
            f"file://{store_dir}", "--tokens", str(root / "tokens.toml"), "--port", str(port), "--workers", "1",
            "--reads-journal", str(root / "reads"),
        ]  # fmt: skip
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, env={**os.environ})
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx2.get(f"{base}/signin", timeout=2)
                    break
                except httpx2.TransportError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit("loom-otel serve did not start") from None
                    time.sleep(0.2)
            started = time.perf_counter()
            first = httpx2.get(f"{base}/api/executions/exec-000000?tenant=acme&step=s000",
                               headers={"Authorization": f"Bearer {TOKEN}"}, timeout=600)  # fmt: skip
            assert first.status_code == 200, first.text
            print(f"index: built on the first read in {time.perf_counter() - started:.1f} s")
            latencies = asyncio.run(read_for(base, executions, args.readers, args.seconds))
        finally:
            server.terminate()
            server.wait(30)
        total = sum(len(v) for v in latencies.values())
        print(f"{args.readers} readers, {args.seconds:g} s, 1 worker: {total / args.seconds:,.1f} reads/s")
        for kind, label in (
            ("part", "part  (one step, one part, JSON)"),
            ("page", "page  (execution, 100 parts, HTML)"),
        ):
            values = latencies[kind]
            print(f"{label:38} {len(values):7,} reads  p50 {percentile(values, 0.5) * 1e3:8.1f} ms  "
                  f"p99 {percentile(values, 0.99) * 1e3:8.1f} ms")  # fmt: skip
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
