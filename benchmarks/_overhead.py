"""The harness both SDK benchmarks share: the replayed vendor, interleaved rounds, the variants, the table.

Transports (``--transport``): ``memory`` (default), an in-process ``httpx2.MockTransport``, so the bare
call is the SDK's own work and nothing else (the hardest ratio); ``socket``, a replay server in its own
process on 127.0.0.1 and the SDK's real HTTP transport (the cheapest real call). Both replay the same
recorded bytes with new reasoning per call (``_replay.py``).

Variants (each against ``bare``, the uninstrumented SDK call, in the same run):

- ``loop``: capture on, file store, journal, the calls of one agent loop (one ``execution()``, as when a
  trace or an explicit execution covers the loop); durability left to the OS (``store_fsync=False``,
  ``journal_durability="os"``, i.e. LOOM_OTEL_STORE_FSYNC=false and LOOM_OTEL_JOURNAL_DURABILITY=os):
  the work loom-otel adds to the call path;
- ``new-execution``: the same, but every call is its own trace and so its own execution (the worst case
  for the store: each call opens a new execution directory and pack);
- ``loop+fsync``: the defaults (blob fsync, journal group commit), reported separately because it
  measures the disk, not the library.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx2
from _replay import MARK, Recording
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from loom_otel.core import ReasoningConfig, execution
from loom_otel.core._config import reset_runtime

__all__ = ["arguments", "replayed", "run"]


class _Discard(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transport", choices=("memory", "socket"), default="memory")
    return parser.parse_args()


@contextlib.contextmanager
def replayed(args: argparse.Namespace) -> Iterator[tuple[str | None, httpx2.BaseTransport | None]]:
    """(base URL, transport) for the SDK client: 8 KiB of new reasoning per call, streams in 50 deltas.
    ``memory``: no URL of its own, an in-process transport; ``socket``: a server URL, the SDK's own transport."""
    options: dict[str, Any] = {"reasoning_text": MARK, "thinking_size": 8192, "stream_chunks": 50, "strict": False}
    if args.transport == "memory":
        yield None, Recording(**options).transport()
        return
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_replay.py")), json.dumps(options)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip(), None
    finally:
        server.terminate()
        server.wait()


def _timed(fn: Callable[[], Any], calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def run(
    title: str,
    instrumentor: Callable[[], Any],
    calls: Sequence[tuple[str, Callable[[], Any]]],
    args: argparse.Namespace,
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_Discard()))
    root = Path(tempfile.mkdtemp(prefix="loom-bench-"))
    fast = ReasoningConfig(
        store=f"file://{root}/nofsync", store_fsync=False, journal_durability="os", journal=root / "nofsync-journal"
    )
    variants = {
        "loop": (fast, True),
        "new-execution": (fast, False),
        "loop+fsync": (ReasoningConfig(store=f"file://{root}/fsync", journal=root / "fsync-journal"), True),
    }
    results: dict[tuple[str, str], list[float]] = {}
    for _, fn in calls:  # warm up imports, pools and caches
        _timed(fn, 20)
    for _ in range(args.rounds):
        for name, fn in calls:
            results.setdefault(("bare", name), []).extend(_timed(fn, args.calls))
            for variant, (config, in_loop) in variants.items():
                reset_runtime()
                instance = instrumentor()
                instance.instrument(tracer_provider=provider, config=config)
                scope = execution(f"bench-{variant}") if in_loop else contextlib.nullcontext()
                try:
                    with scope:
                        results.setdefault((variant, name), []).extend(_timed(fn, args.calls))
                finally:
                    instance.uninstrument()
    provider.shutdown()
    print(f"{title}, {args.transport} transport, {args.calls} calls x {args.rounds} rounds (medians per call)")
    print(f"{'call':9} {'variant':15} {'median us':>10} {'ratio':>6}")
    for name, _ in calls:
        bare = statistics.median(results[("bare", name)])
        print(f"{name:9} {'bare':15} {bare * 1e6:10.0f} {1.0:6.3f}")
        for variant in variants:
            median = statistics.median(results[(variant, name)])
            print(f"{name:9} {variant:15} {median * 1e6:10.0f} {median / bare:6.3f}")
