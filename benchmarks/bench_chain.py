"""Throughput of the audit path: journal append + span event + ChainedSpanExporter, against the same
spans and events through a plain OTLPSpanExporter, to the same local OTLP/gRPC receiver, in one run.

    .venv/bin/python benchmarks/bench_chain.py [--events 100000] [--threads 8]

Events/s is measured from the first capture to the end of ``provider.shutdown()`` (everything
delivered and acknowledged by the receiver, which runs in its own process so it does not share the
GIL). The BatchSpanProcessor queue is large enough that neither path drops spans. Prints events/s per
durability policy and the ratio to plain OTLP (target >= 0.7 with ``batch``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

EVENT = "loom.reasoning.captured"
ATTRIBUTES = {
    "loom.execution.id": "0af7651916cd43dd8448eb211c80319c",
    "loom.step.id": "b7ad6b7169203331",
    "loom.attempt": 1,
    "gen_ai.provider.name": "anthropic",
    "gen_ai.request.model": "claude-x",
    "gen_ai.response.model": "claude-x",
    "loom.reasoning.part.kind": ["text"],
    "loom.reasoning.part.ref": ["0" * 32 + "/" + "1" * 64],
    "loom.reasoning.part.digest": ["2" * 64],
    "loom.reasoning.part.size": [8192],
    "loom.reasoning.part.omitted": [False],
}


def serve(port_file: str) -> None:
    """The receiver: counts spans, acknowledges every request."""
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    class Servicer(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Servicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    Path(port_file).write_text(str(port))
    server.wait_for_termination()


def run(mode: str, endpoint: str, events: int, threads: int, workdir: Path) -> float:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from loom_otel.core._evidence._journal._writer import Durability, Journal
    from loom_otel.exporters.chain import ChainedSpanExporter

    inner = OTLPSpanExporter(endpoint=endpoint, insecure=True)
    journal = None
    if mode == "plain":
        exporter = inner
    else:
        durability: Durability = "os" if mode == "os" else "always" if mode == "always" else "batch"
        journal = Journal(workdir / mode, durability=durability, checkpoint_key=None)
        exporter = ChainedSpanExporter(inner, journal=journal)
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_queue_size=events + 1024, max_export_batch_size=512, schedule_delay_millis=100)
    )
    tracer = provider.get_tracer("bench")
    per_thread = events // threads

    def work() -> None:
        for _ in range(per_thread):
            with tracer.start_as_current_span("chat claude-x") as span:
                if journal is None:
                    span.add_event(EVENT, ATTRIBUTES)
                else:
                    entry = journal.append("capture", ATTRIBUTES)
                    span.add_event(
                        EVENT,
                        {
                            **ATTRIBUTES,
                            "loom.audit.origin": entry.origin,
                            "loom.audit.seq": entry.seq,
                            "loom.audit.prev": entry.prev,
                            "loom.audit.hash": entry.hash,
                        },
                        timestamp=entry.time,
                    )

    started = time.perf_counter()
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    provider.shutdown()
    elapsed = time.perf_counter() - started
    if journal is not None:
        journal.close()
    return per_thread * threads / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return 0
    import warnings

    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="bench-chain-") as tmp:
        port_file = Path(tmp) / "port"
        receiver = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file)])
        try:
            while not port_file.exists() or not port_file.read_text():
                time.sleep(0.05)
            endpoint = f"127.0.0.1:{port_file.read_text()}"
            results: dict[str, float] = {}
            for mode in ("plain", "os", "batch", "always", "plain"):  # plain twice: first and last
                rate = run(mode, endpoint, args.events, args.threads, Path(tmp))
                results[mode] = max(rate, results.get(mode, 0.0)) if mode == "plain" else rate
                print(f"{mode:>7}: {rate:10,.0f} events/s", flush=True)
        finally:
            receiver.terminate()
            receiver.wait()
    plain = results["plain"]
    print(f"\n{args.events:,} capture events, {args.threads} threads, {os.cpu_count()} CPUs")
    for mode in ("os", "batch", "always"):
        print(f"chained/{mode:<6} {results[mode]:10,.0f} events/s   ratio to plain OTLP {results[mode] / plain:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
