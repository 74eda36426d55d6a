"""Capture overhead at the Anthropic seam: the bare SDK call vs the instrumented call, in one run.

    python benchmarks/bench_anthropic.py [--calls 200] [--rounds 3]

The real ``anthropic`` SDK over an in-process transport that replays one response recorded from the
built-in simulator: 8 KiB of thinking; streams carry it in 50 thinking deltas. Variants: see
``_overhead.py``. Targets (issue 2): instrumented / bare <= 1.15 non-streaming, <= 1.10 streaming.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
from _overhead import arguments, recorded_transport, run

from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing.simulator import Simulator

REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 16000,
    "thinking": {"type": "enabled", "budget_tokens": 8192},
    "messages": [{"role": "user", "content": "Plan the trip."}],
}


def main() -> None:
    transport = recorded_transport(Simulator(thinking_size=8192, stream_chunks=50, strict=False))
    client = anthropic.Anthropic(
        api_key="bench",
        base_url="https://api.anthropic.bench",
        max_retries=0,
        open_telemetry=False,
        http_client=httpx2.Client(transport=transport),
    )

    def create() -> Any:
        return client.messages.create(**REQUEST)

    def stream() -> None:
        with client.messages.create(stream=True, **REQUEST) as events:
            for _ in events:
                pass

    run(
        f"anthropic {anthropic.__version__}, 8 KiB thinking",
        AnthropicInstrumentor,
        [("create", create), ("stream", stream)],
        arguments(),
    )


if __name__ == "__main__":
    main()
