"""Capture overhead at the Anthropic seam: the bare SDK call vs the instrumented call, in one run.

    python benchmarks/bench_anthropic.py [--calls 200] [--rounds 3]

Both sides call the real ``anthropic`` SDK over an in-process ``httpx2.MockTransport`` that replays
one response recorded from the built-in simulator (8 KiB of thinking; streams: 50 thinking deltas), so
the bare figure is the SDK's own cost, not the simulator's. Rounds interleave bare and instrumented batches so drift on
the machine hits both. Figures are medians per call.

- ``loop``: capture on, file store, journal, the calls of one agent loop (one ``execution()``, as in an
  app where a trace or an explicit execution covers the loop); durability left to the OS
  (``store_fsync=False``, ``journal_durability="os"``, i.e. LOOM_OTEL_STORE_FSYNC=false and
  LOOM_OTEL_JOURNAL_DURABILITY=os): the work loom-otel adds to the call path.
- ``new-execution``: the same, but every call is its own trace and so its own execution (the worst case
  for the store: each call opens a new execution directory and pack).
- ``loop+fsync``: the defaults (blob fsync, journal group commit), reported separately because it
  measures the disk, not the library.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from loom_otel.core import ReasoningConfig, execution
from loom_otel.core._config import reset_runtime
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing.simulator import Simulator

REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 16000,
    "thinking": {"type": "enabled", "budget_tokens": 8192},
    "messages": [{"role": "user", "content": "Plan the trip."}],
}


class _Discard(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def recorded_transport() -> httpx2.MockTransport:
    """Record one JSON and one SSE answer from the simulator, then replay them byte for byte."""
    sim = Simulator(thinking_size=8192, stream_chunks=50, strict=False)
    recorder = sim.anthropic_client()
    json_body = recorder.messages.with_raw_response.create(**REQUEST).http_response.content
    with recorder.messages.with_streaming_response.create(stream=True, **REQUEST) as raw:
        sse_body = b"".join(raw.iter_bytes())

    def handler(request: httpx2.Request) -> httpx2.Response:
        if b'"stream":true' in request.content:
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=sse_body)
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=json_body)

    return httpx2.MockTransport(handler)


def _timed(fn: Callable[[], Any], calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    client = anthropic.Anthropic(
        api_key="bench",
        base_url="https://api.anthropic.bench",
        max_retries=0,
        open_telemetry=False,
        http_client=httpx2.Client(transport=recorded_transport()),
    )

    def create() -> Any:
        return client.messages.create(**REQUEST)

    def stream() -> Any:
        with client.messages.create(stream=True, **REQUEST) as events:
            for _ in events:
                pass

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
    for fn in (create, stream):  # warm up imports, pools and caches
        _timed(fn, 20)
    for _ in range(args.rounds):
        for name, fn in (("create", create), ("stream", stream)):
            results.setdefault(("bare", name), []).extend(_timed(fn, args.calls))
            for variant, (config, in_loop) in variants.items():
                reset_runtime()
                instrumentor = AnthropicInstrumentor()
                instrumentor.instrument(tracer_provider=provider, config=config)
                scope = execution(f"bench-{variant}") if in_loop else contextlib.nullcontext()
                try:
                    with scope:
                        results.setdefault((variant, name), []).extend(_timed(fn, args.calls))
                finally:
                    instrumentor.uninstrument()
    provider.shutdown()
    print(f"anthropic {__import__('anthropic').__version__}, 8 KiB thinking, {args.calls} calls x {args.rounds} rounds")
    print(f"{'call':8} {'variant':20} {'median us':>10} {'ratio':>6}")
    for name in ("create", "stream"):
        bare = statistics.median(results[("bare", name)])
        print(f"{name:8} {'bare':20} {bare * 1e6:10.0f} {1.0:6.3f}")
        for variant in variants:
            median = statistics.median(results[(variant, name)])
            print(f"{name:8} {variant:20} {median * 1e6:10.0f} {median / bare:6.3f}")


if __name__ == "__main__":
    main()
