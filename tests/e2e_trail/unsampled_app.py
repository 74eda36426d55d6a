"""A short-lived application whose traces are never sampled, and which leaves the tracer provider's
shutdown to the interpreter's exit: ``python unsampled_app.py JOURNAL ENDPOINT N always_off|parent
[wait]`` (``wait``: then sleep until a signal ends the process).

``always_off`` expects ``OTEL_TRACES_SAMPLER=always_off`` in the environment (the SDK reads it);
``parent`` runs every call under a remote parent whose ``traceparent`` says "not sampled".
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from opentelemetry.context import attach
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from loom_otel.core import MemoryReasoningStore, Reasoning, ReasoningConfig, ReasoningKind, Runtime
from loom_otel.core._calls._capture import capture
from loom_otel.core._evidence._journal._checkpoint import generate_key
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.exporters.chain import ChainedSpanExporter

CANARY = "CANARY-unsampled-reasoning-5c1e"
UNSAMPLED_PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"


def main(journal_dir: Path, endpoint: str, count: int, mode: str) -> Runtime:
    key = journal_dir.with_name("checkpoint.pem")
    generate_key(key)  # signed checkpoints: no "unsigned" warning either
    journal = Journal(journal_dir, checkpoint_key=key)
    runtime = Runtime.resolve(ReasoningConfig(store=MemoryReasoningStore(), journal=journal))
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(ChainedSpanExporter(OTLPSpanExporter(endpoint=endpoint, insecure=True), journal=journal))
    )
    if mode == "parent":
        attach(TraceContextTextMapPropagator().extract({"traceparent": UNSAMPLED_PARENT}))
    tracer = provider.get_tracer("app")
    for _ in range(count):
        with tracer.start_as_current_span("chat m") as span:
            assert not span.get_span_context().trace_flags.sampled
            reasoning = Reasoning(ReasoningKind.TEXT, "anthropic", text=CANARY, signature="sig")
            capture(runtime, span, [reasoning], provider="anthropic", request_model="m", response_model="m")
    print(journal.head[0], flush=True)
    return runtime


if __name__ == "__main__":
    RUNTIME = main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4])
    if sys.argv[5:] == ["wait"]:
        time.sleep(600)  # alive until exit, as instrumented
