"""``loom-otel demo``: an agent loop on the real vendor SDKs against the built-in simulator, captured
exactly as an application would be, then the audit report. No API key, no network."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from loom_otel.cli._table import render_table

__all__ = ["register"]

TOOLS = [
    {
        "name": "get_weather",
        "description": "The weather forecast for a city and a date.",
        "input_schema": {
            "type": "object",
            "properties": {"location": {"type": "string"}, "date": {"type": "string"}},
            "required": ["location"],
        },
    }
]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("demo", help="run an instrumented agent loop against the built-in simulator")
    parser.add_argument("--dir", type=Path, help="where the store and journal go (default: a new temp dir)")
    parser.set_defaults(func=run)


def _anthropic_loop(sim: Any) -> int:
    """A two-turn tool loop; the assistant turn goes back unchanged, as agent frameworks do."""
    client = sim.anthropic_client()
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Should I pack an umbrella for Lyon tomorrow?"}]
    request = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "tools": TOOLS,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
    }
    turns = 0
    while True:
        with client.messages.stream(messages=messages, **request) as stream:
            message = stream.get_final_message()
        turns += 1
        if message.stop_reason != "tool_use":
            return turns
        messages.append({"role": "assistant", "content": message.to_param()["content"]})
        call = next(b for b in message.content if b.type == "tool_use")
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call.id, "content": "Rain, 12 C, 80% chance after 3 pm."}
                ],
            }
        )


def run(args: argparse.Namespace) -> int:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from loom_otel.core import ReasoningConfig
    from loom_otel.core._journal import iter_records
    from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
    from loom_otel.testing.simulator import Simulator

    started = time.perf_counter()
    root = (args.dir or Path(tempfile.mkdtemp(prefix="loom-otel-demo-"))).absolute()
    store_dir = root / "store"
    journal_dir = root / "journal"
    print(f"loom-otel demo: store {store_dir}, journal {journal_dir}")
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    config = ReasoningConfig(store=f"file://{store_dir}", journal=journal_dir)
    sim = Simulator(redacted=True)
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=provider, config=config)
    try:
        turns = _anthropic_loop(sim)
    finally:
        instrumentor.uninstrument()
    provider.shutdown()
    print(
        f"\nanthropic: {turns} model calls through the real SDK (messages.stream), tool loop accepted by the "
        f"strict simulator"
    )

    from loom_otel.core import FileReasoningStore

    store = FileReasoningStore(store_dir)
    rows = []
    for record in iter_records(journal_dir):
        if record.get("type") != "capture":
            continue
        attributes = cast("dict[str, Any]", record["attributes"])
        execution_id = attributes["loom.execution.id"]
        for kind, ref, digest, size in zip(
            attributes["loom.reasoning.part.kind"],
            attributes["loom.reasoning.part.ref"],
            attributes["loom.reasoning.part.digest"],
            attributes["loom.reasoning.part.size"],
            strict=True,
        ):
            stored = store.get(ref, tenant=attributes.get("loom.tenant"), execution_id=execution_id) if ref else None
            status = "redacted" if kind == "redacted" else ("ok" if stored is not None else "not kept")
            rows.append(
                (
                    record["seq"],
                    attributes["gen_ai.provider.name"],
                    attributes["loom.step.id"],
                    kind,
                    status,
                    (ref[:20] + "...") if ref else "-",
                    digest[:12] or "-",
                    size,
                )
            )
    print()
    print(render_table(("seq", "provider", "step", "kind", "status", "ref", "digest", "size"), rows))
    events = sum(1 for s in spans.get_finished_spans() for e in s.events if e.name == "loom.reasoning.captured")
    print(f"\n{events} span events carry only refs, digests and sizes; readable text lives in {store_dir / 'blobs'}")
    print(f"done in {time.perf_counter() - started:.2f} s")
    return 0
