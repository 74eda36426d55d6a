"""Capture overhead at the Anthropic seam: the bare SDK call vs the instrumented call, in one run.

    python benchmarks/bench_anthropic.py [--calls 200] [--rounds 5] [--transport memory|socket] [--only create]

The real ``anthropic`` SDK against replies recorded from the built-in simulator (``_replay.py``): 8 KiB
of thinking, new text and signature on every call; streams carry it in 50 thinking deltas.
Calls: ``create``, ``create(stream=True)`` iterated (``stream``), and the ``messages.stream()`` helper
iterated (``helper``). Transports and variants (the defaults first, the official OTel instrumentation
``opentelemetry-instrumentation-genai-anthropic`` when installed: extra ``bench``): see ``_overhead.py``.
Targets (issue 15, defaults, a new conversation per call): ``create`` <= 1.50x bare, ``stream`` <= 1.25x.
"""

from __future__ import annotations

import argparse
from typing import Any

import anthropic
import httpx2
from _overhead import arguments, loom_variants, official_variant, remove, replayed, run, store_root

from loom_otel.instrumentation.anthropic import AnthropicInstrumentor

REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 16000,
    "thinking": {"type": "enabled", "budget_tokens": 8192},
    "messages": [{"role": "user", "content": "Plan the trip."}],
}


def main() -> None:
    args = arguments()
    with replayed(args) as (url, transport):
        measure(client_of(url, transport), args)


def client_of(url: str | None, transport: httpx2.BaseTransport | None) -> anthropic.Anthropic:
    """The SDK client of the replayed vendor (``_overhead.replayed``)."""
    return anthropic.Anthropic(
        api_key="bench",
        base_url=url or "https://api.anthropic.bench",
        max_retries=0,
        open_telemetry=False,
        http_client=httpx2.Client(transport=transport),
    )


def official() -> Any:
    """The official OTel instrumentor of the SDK (``None`` when the ``bench`` extra is not installed)."""
    try:
        from opentelemetry.instrumentation.genai.anthropic import AnthropicInstrumentor as Official
    except ImportError:
        return None
    return Official


def measure(client: anthropic.Anthropic, args: argparse.Namespace) -> None:
    def create() -> Any:
        return client.messages.create(**REQUEST)

    def stream() -> None:
        with client.messages.create(stream=True, **REQUEST) as events:
            for _ in events:
                pass

    def helper() -> None:
        with client.messages.stream(**REQUEST) as events:
            for _ in events:
                pass

    root = store_root(args)
    try:
        run(
            f"anthropic {anthropic.__version__}, 8 KiB thinking, stores under {root}",
            [("create", create), ("stream", stream), ("helper", helper)],
            loom_variants(AnthropicInstrumentor, root) + official_variant(official(), "official OTel (no content)"),
            args,
        )
    finally:
        remove(root)


if __name__ == "__main__":
    main()
