"""What telemetry citizenship adds per model call: the reasoning scrubber and the GenAI metrics.

Anthropic ``messages.create`` against the in-process simulator, capture on (memory store, journal),
median microseconds per call over interleaved rounds, for:

- ``loom``: loom-otel with the scrubber kept off this tracer provider and no meter provider (the no-op
  global one): the baseline;
- ``+scrub``: the scrubber on (what ``instrument()`` installs);
- ``+metrics``: the scrubber and an SDK ``MeterProvider`` with a reader (the three GenAI histograms);
- ``openllmetry``, ``openllmetry+scrub``, ``openinference``, ``openinference+scrub``: OpenLLMetry's or
  OpenInference's instrumentation wrapped outside loom-otel, content on (their default), without and
  with the scrubber (their spans carry the messages and responses the scrubber rewrites).

The last column is the CPU time (``time.thread_time``) spent inside the scrubber per call, the median
of the rounds: unlike the wall-clock medians it holds on a busy machine.

Run: ``python benchmarks/bench_citizen.py [--calls 200] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.core import _scrub as scrub
from loom_otel.core._evidence._journal import _writer as _journal
from loom_otel.core._runtime._config import reset_runtime
from loom_otel.core._scrub import _install
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing.simulator import Simulator

REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 2048,
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "messages": [{"role": "user", "content": "Weather in Paris?"}],
}


_SCRUB_NS = [0]


def _timed(scrub_one: Callable[[Any], None]) -> Callable[[Any], None]:
    def timed(record: Any) -> None:
        start = time.thread_time_ns()
        scrub_one(record)
        _SCRUB_NS[0] += time.thread_time_ns() - start

    return timed


# Before the first instrument(): the SDK's pipelines are wrapped with what these names hold then.
for _name in ("_scrub_span_safely", "_scrub_log_safely"):
    setattr(_install, _name, _timed(getattr(_install, _name)))


class _Discard(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


@contextmanager
def _variant(name: str, journal: Path) -> Iterator[Callable[[], None]]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    if not name.endswith("scrub") and name != "+metrics":
        scrub.leave_alone(provider)  # keep the scrubber off this provider (the baseline)
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()]) if name == "+metrics" else None
    reset_runtime()
    loom = AnthropicInstrumentor()
    loom.instrument(
        tracer_provider=provider,
        meter_provider=meters,
        config=ReasoningConfig(store=MemoryReasoningStore(), journal=journal),
    )
    other: Any = None
    if name.startswith("openllmetry"):
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor as OpenLLMetry

        other = OpenLLMetry()
    elif name.startswith("openinference"):
        from openinference.instrumentation.anthropic import AnthropicInstrumentor as OpenInference

        other = OpenInference()
    if other is not None:
        other.instrument(tracer_provider=provider)
    client = Simulator(thinking_size=8192).anthropic_client()
    try:
        yield lambda: client.messages.create(**REQUEST)
    finally:
        if other is not None:
            other.uninstrument()
        loom.uninstrument()
        reset_runtime()
        _journal._close_all()  # its group commit and checkpoints write no more into the directory


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    names = ("loom", "+scrub", "+metrics", "openllmetry", "openllmetry+scrub", "openinference", "openinference+scrub")
    samples: dict[str, list[float]] = {n: [] for n in names}
    scrubbing: dict[str, list[float]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for name in names:
                with _variant(name, Path(tmp) / f"{name}-{round_}") as call:
                    for _ in range(10):
                        call()
                    _SCRUB_NS[0] = 0
                    for _ in range(args.calls):
                        start = time.perf_counter()
                        call()
                        samples[name].append(time.perf_counter() - start)
                    scrubbing[name].append(_SCRUB_NS[0] / args.calls / 1e3)
    base = statistics.median(samples["loom"])
    print(f"{'variant':<20}{'median us/call':>16}{'added us':>12}{'scrub CPU us':>14}")
    for name in names:
        median = statistics.median(samples[name])
        reference = (
            statistics.median(samples[name.removesuffix("+scrub")])
            if name.endswith("+scrub") and name != "+scrub"
            else base
        )
        cpu = statistics.median(scrubbing[name])
        print(f"{name:<20}{median * 1e6:>16.0f}{(median - reference) * 1e6:>12.0f}{cpu:>14.0f}")


if __name__ == "__main__":
    main()
