"""An exporting application: captures through BatchSpanProcessor(ChainedSpanExporter(OTLP gRPC)), records
with no sampled call to join (checkpoints) as OTLP gRPC log records.

Run in-process by the tests, or as a subprocess (``python -m``-free: ``python app.py JOURNAL ENDPOINT N``)
for the kill -9 test, printing ``seq`` after each capture.
"""

from __future__ import annotations

import sys
from pathlib import Path

from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from loom_otel.core import MemoryReasoningStore, Reasoning, ReasoningConfig, ReasoningKind, Runtime
from loom_otel.core._calls._capture import capture
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.exporters.chain import ChainedSpanExporter

CANARY = "CANARY-reasoning-text-7f3a"


def build(journal_dir: Path, endpoint: str, *, queue: int = 64, timeout: float = 2.0, **chain: float):
    journal = Journal(journal_dir, durability="batch", checkpoint_key=None, checkpoint_every=1000)
    runtime = Runtime.resolve(ReasoningConfig(store=MemoryReasoningStore(), journal=journal))
    exporter = ChainedSpanExporter(
        OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=timeout),
        journal=journal,
        logs=OTLPLogExporter(endpoint=endpoint, insecure=True, timeout=timeout),
        **chain,
    )
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter, max_queue_size=queue, max_export_batch_size=min(queue, 32), schedule_delay_millis=20
        )
    )
    return runtime, provider, exporter


def one_capture(runtime: Runtime, provider: TracerProvider, text: str = CANARY) -> int:
    tracer = provider.get_tracer("app")
    with tracer.start_as_current_span("chat m") as span:
        result = capture(
            runtime,
            span,
            [Reasoning(ReasoningKind.TEXT, "anthropic", text=text, signature="sig")],
            provider="anthropic",
            request_model="m",
            response_model="m",
        )
    assert result is not None
    return runtime.journal.head[0]


if __name__ == "__main__":
    runtime, provider, _ = build(Path(sys.argv[1]), sys.argv[2], resend_after=0.5)
    for _ in range(int(sys.argv[3])):
        print(one_capture(runtime, provider), flush=True)
    provider.shutdown()
