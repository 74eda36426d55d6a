"""Capture overhead at the Gemini seam: the bare SDK call vs the instrumented call, in one run.

    python benchmarks/bench_gemini.py [--calls 200] [--rounds 3]

Both sides call the real ``google-genai`` SDK over the in-process simulator transport with 8 KiB of
thought text (``include_thoughts``; streams: the thoughts in 50 chunks). Rounds interleave bare and
instrumented batches so drift on the machine hits both. Figures are medians per call.

- ``instrumented``: capture on, file store, journal; durability left to the OS (``store_fsync=False``,
  ``journal_durability="os"``, i.e. LOOM_OTEL_STORE_FSYNC=false and LOOM_OTEL_JOURNAL_DURABILITY=os):
  the work loom-otel adds to the call path.
- ``instrumented+fsync``: the defaults (blob fsync + directory fsync, journal group commit), reported
  separately because it measures the disk, not the library.

Targets (same as Anthropic): instrumented / bare <= 1.15 non-streaming, <= 1.10 streaming.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.genai import types
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from loom_otel.core import ReasoningConfig
from loom_otel.core._config import reset_runtime
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing.simulator import Simulator

MODEL = "gemini-3-flash-preview"
CONFIG = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(include_thoughts=True))


class _Discard(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


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

    sim = Simulator(thinking_size=8192, stream_chunks=50, strict=False)
    client = sim.genai_client()

    def generate() -> Any:
        return client.models.generate_content(model=MODEL, contents="Plan the trip.", config=CONFIG)

    def stream() -> Any:
        for _ in client.models.generate_content_stream(model=MODEL, contents="Plan the trip.", config=CONFIG):
            pass

    chunks = sum(1 for _ in client.models.generate_content_stream(model=MODEL, contents="x", config=CONFIG))
    thought = "".join(p.text for p in generate().candidates[0].content.parts if p.thought)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_Discard()))
    root = Path(tempfile.mkdtemp(prefix="loom-bench-"))
    variants = {
        "instrumented": ReasoningConfig(
            store=f"file://{root}/nofsync", store_fsync=False, journal_durability="os", journal=root / "nofsync-journal"
        ),
        "instrumented+fsync": ReasoningConfig(store=f"file://{root}/fsync", journal=root / "fsync-journal"),
    }
    results: dict[tuple[str, str], list[float]] = {}
    for fn in (generate, stream):  # warm up imports, pools and caches
        _timed(fn, 20)
    for _ in range(args.rounds):
        for name, fn in (("generate", generate), ("stream", stream)):
            results.setdefault(("bare", name), []).extend(_timed(fn, args.calls))
            for variant, config in variants.items():
                reset_runtime()
                instrumentor = GoogleGenAiInstrumentor()
                instrumentor.instrument(tracer_provider=provider, config=config)
                try:
                    results.setdefault((variant, name), []).extend(_timed(fn, args.calls))
                finally:
                    instrumentor.uninstrument()
    provider.shutdown()
    version = __import__("google.genai").genai.__version__
    print(
        f"google-genai {version}, {len(thought.encode())} B of thought text, {chunks} stream chunks, "
        f"{args.calls} calls x {args.rounds} rounds"
    )
    print(f"{'call':9} {'variant':20} {'median us':>10} {'ratio':>6}")
    for name in ("generate", "stream"):
        bare = statistics.median(results[("bare", name)])
        print(f"{name:9} {'bare':20} {bare * 1e6:10.0f} {1.0:6.3f}")
        for variant in variants:
            median = statistics.median(results[(variant, name)])
            print(f"{name:9} {variant:20} {median * 1e6:10.0f} {median / bare:6.3f}")


if __name__ == "__main__":
    main()
