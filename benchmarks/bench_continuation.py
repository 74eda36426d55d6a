"""The continuation pass vs the bare SDK call it precedes, in one run.

    python benchmarks/bench_continuation.py [--calls 200] [--rounds 3]

A 50-message Anthropic history carrying 20 thinking blocks (25 user/assistant turns, 20 of them with
thinking) is produced through the strict simulator with loom-otel on, so every block has a recorded
binding. Then, interleaved in rounds:

- ``bare``: the uninstrumented ``client.messages.create`` of that history plus one new user message,
  against the strict simulator (what the application pays without loom-otel), and against the lenient
  simulator (SDK + transport only, the simulator does not verify 20 signatures);
- ``pass``: ``AnthropicContinuation.prepare`` on the same kwargs, the whole request-side work loom-otel
  adds (canonicalize 51 messages, chain the binding hash, look up and check 20 blocks), keep mode;
- ``pass+redact``: the same with the application's texts emptied, so all 20 are rehydrated from a
  memory store (sealed read + digest check).

Figures are medians per call; the ratio is pass / bare.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loom_otel.core import MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.core._runtime._config import Runtime
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.anthropic._continuation import AnthropicContinuation
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator

TURNS, THINKING_TURNS = 25, 20
KW: dict[str, Any] = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "system": "You are a planner."}


def _history(sim: Simulator, config: ReasoningConfig) -> list[Any]:
    history: list[Any] = []
    with instrumented(AnthropicInstrumentor(), config=config), execution("bench"):
        client = sim.anthropic_client()
        for turn in range(TURNS):
            history.append({"role": "user", "content": f"Step {turn}: what next for the Lyon trip?"})
            thinking = {"type": "adaptive"} if turn >= TURNS - THINKING_TURNS else {"type": "disabled"}
            message = client.messages.create(messages=list(history), thinking=thinking, **KW)
            history.append(message.to_param())
    return history


def _median_us(fn: Callable[[], Any], calls: int) -> float:
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryReasoningStore()
        config = ReasoningConfig(store=store, journal=Path(tmp) / "journal", journal_durability="os")
        strict = Simulator(strict=True, thinking_size=2048)
        lenient = Simulator(strict=False, thinking_size=2048)
        history = _history(strict, config)
        kwargs = {**KW, "thinking": {"type": "adaptive"}, "messages": [*history, {"role": "user", "content": "Go."}]}
        blocks = sum(1 for m in history if m["role"] == "assistant" for b in m["content"] if b.type == "thinking")
        assert len(history) == 2 * TURNS and blocks == THINKING_TURNS, (len(history), blocks)
        redacted = [
            {
                **m,
                "content": [b.model_copy(update={"thinking": ""}) if b.type == "thinking" else b for b in m["content"]],
            }
            if m["role"] == "assistant"
            else m
            for m in kwargs["messages"]
        ]
        adapter = AnthropicContinuation(Runtime.resolve(config))
        bare_strict, bare_lenient = strict.anthropic_client(), lenient.anthropic_client()
        assert adapter.prepare("anthropic", kwargs) is not None
        rows: dict[str, list[float]] = {k: [] for k in ("bare strict", "bare lenient", "pass", "pass+redact")}
        with execution("bench"):
            out = adapter.prepare("anthropic", {**kwargs, "messages": redacted})
            assert out is not None and len(out.plan.texts) == THINKING_TURNS and not out.plan.drops
            for _ in range(args.rounds):
                strict.reset()
                lenient.reset()
                rows["bare strict"].append(_median_us(lambda: bare_strict.messages.create(**kwargs), args.calls // 4))
                rows["bare lenient"].append(_median_us(lambda: bare_lenient.messages.create(**kwargs), args.calls // 4))
                rows["pass"].append(_median_us(lambda: adapter.prepare("anthropic", kwargs), args.calls))
                rows["pass+redact"].append(
                    _median_us(lambda: adapter.prepare("anthropic", {**kwargs, "messages": redacted}), args.calls)
                )
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"history: {len(history)} messages, {blocks} thinking blocks of ~2 KiB; medians per call")
    for name, value in med.items():
        print(f"  {name:<14} {value:9.1f} us")
    for bare in ("bare strict", "bare lenient"):
        for name in ("pass", "pass+redact"):
            print(f"  {name} / {bare}: {100 * med[name] / med[bare]:.1f}%")


if __name__ == "__main__":
    main()
