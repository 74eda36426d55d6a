"""The live view must cost a streamed model call nothing it can notice (issue 7 "Done means").

Streams Anthropic calls (``create(stream=True)``, in-process simulator, 64 reasoning deltas each)
without the live view, then with a sink that raises, a sink that sleeps 1 s per delta, and a guard
that suppresses everything. Scenarios are interleaved round by round so drift hits them alike; each
call's result is compared with the baseline's, and the median per-call time with the baseline's
(the target: within 10%).

    .venv/bin/python benchmarks/bench_live.py [--transport http|inprocess] [--rounds 60] [--calls 10]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import ReasoningDelta, dropped_deltas
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator

REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 4096,
    "thinking": {"type": "enabled", "budget_tokens": 2048},
    "messages": [{"role": "user", "content": "Should I pack an umbrella for Lyon tomorrow?"}],
}


def raising_sink(delta: ReasoningDelta) -> None:
    raise RuntimeError("sink down")


def sleeping_sink(delta: ReasoningDelta) -> None:
    time.sleep(1.0)


def suppress_all(delta: ReasoningDelta) -> None:
    return None


def _config(root: Path, **live: Any) -> ReasoningConfig:
    return ReasoningConfig(store=MemoryReasoningStore(), journal=root / "journal", journal_durability="os", **live)


BASELINE = "live off (baseline)"
SCENARIOS: dict[str, Callable[[Path], ReasoningConfig]] = {
    BASELINE: _config,
    "raising sink": lambda root: _config(root, live=True, on_reasoning=raising_sink),
    "sink sleeping 1 s/delta": lambda root: _config(root, live=True, on_reasoning=sleeping_sink),
    "guard suppressing all": lambda root: _config(
        root, live=True, on_reasoning=sleeping_sink, delta_guards=[suppress_all]
    ),
}


Client = Callable[[], Any]


@contextlib.contextmanager
def _clients(transport: str) -> Iterator[Client]:
    """``inprocess``: the simulator's in-process transport (no I/O at all: the worst case for any
    per-delta cost); ``http``: the simulator served by a subprocess, so deltas arrive over a socket."""
    sim = Simulator(thinking_size=4096, stream_chunks=64)
    if transport == "inprocess":
        yield sim.anthropic_client
        return
    script = (
        "from loom_otel.testing.simulator import Simulator, serve\n"
        "s = serve(Simulator(thinking_size=4096, stream_chunks=64))\n"
        "print(s.url, flush=True)\n"
        "s.wait()\n"
    )
    server = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        import anthropic

        yield lambda: anthropic.Anthropic(api_key="sim", base_url=url, max_retries=0)
    finally:
        server.terminate()
        server.wait(10)


def _call(client: Client) -> tuple[str, str]:
    thinking, answer = [], []
    with client().messages.create(stream=True, **REQUEST) as stream:
        for event in stream:
            delta = getattr(event, "delta", None)
            if event.type == "content_block_delta" and delta.type == "thinking_delta":
                thinking.append(delta.thinking)
            elif event.type == "content_block_delta" and delta.type == "text_delta":
                answer.append(delta.text)
    return "".join(thinking), "".join(answer)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--calls", type=int, default=10, help="timed calls per scenario per round")
    parser.add_argument("--transport", choices=["http", "inprocess"], default="http")
    args = parser.parse_args()
    with _clients(args.transport) as client:
        return _run(args, client)


def _run(args: argparse.Namespace, sim: Client) -> int:
    times: dict[str, list[float]] = {name: [] for name in SCENARIOS}
    ratios: dict[str, list[float]] = {name: [] for name in SCENARIOS}
    results: dict[str, set[tuple[str, str]]] = {name: set() for name in SCENARIOS}
    drops = dict.fromkeys(SCENARIOS, 0)
    order = list(SCENARIOS)
    shuffler = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            shuffler.shuffle(order)  # no scenario always runs right after another
            medians: dict[str, float] = {}
            for name in order:
                with instrumented(AnthropicInstrumentor(), config=SCENARIOS[name](Path(tmp) / f"{round_}-{name}")):
                    _call(sim)  # warm-up
                    dropped = dropped_deltas(sleeping_sink)
                    samples = []
                    for _ in range(args.calls):
                        started = time.perf_counter()
                        results[name].add(_call(sim))
                        samples.append(time.perf_counter() - started)
                    drops[name] += dropped_deltas(sleeping_sink) - dropped
                times[name].extend(samples)
                medians[name] = statistics.median(samples)
            for name in SCENARIOS:  # each round compared with its own baseline: load drift cancels
                ratios[name].append(medians[name] / medians[BASELINE] - 1)
    print(f"{'scenario':<26} {'median ms':>10} {'p90 ms':>8} {'vs baseline':>12}  same result  dropped")
    worst = 0.0
    for name, samples in times.items():
        ratio = statistics.median(ratios[name])
        worst = max(worst, ratio)
        same = results[name] == results[BASELINE] and len(results[name]) == 1
        p90 = statistics.quantiles(samples, n=10)[-1]
        median = statistics.median(samples) * 1e3
        print(f"{name:<26} {median:>10.2f} {p90 * 1e3:>8.2f} {ratio:>+11.1%}  {same!s:<11}  {drops[name]}")
    print(f"transport: {args.transport}; {args.rounds} rounds x {args.calls} calls per scenario")
    print(f"worst overhead (median of per-round ratios): {worst:+.1%} (target: within 10%)")
    return 0 if worst <= 0.10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
