"""A real OTLP/gRPC receiver (grpcio + opentelemetry-proto) on 127.0.0.1 that appends every request,
traces and logs, to one file as OTLP JSON lines, the way the collector ``file`` exporter does
(collector-config/otelcol-audit.yaml: ``traces/audit`` and ``logs/audit`` into ``file/audit``)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Mapping
from concurrent import futures
from pathlib import Path

import grpc
from google.protobuf.json_format import MessageToJson
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from tests.support.ports import free_port


class _Servicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    def Export(self, request, context):
        line = MessageToJson(request, indent=None).replace("\n", "")
        with self.receiver.lock:
            with self.receiver.path.open("a") as fh:
                fh.write(line + "\n")
            self.receiver.requests += 1
            self.receiver.spans += sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
        return trace_service_pb2.ExportTraceServiceResponse()


class _LogsServicer(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    def Export(self, request, context):
        line = MessageToJson(request, indent=None).replace("\n", "")
        with self.receiver.lock:
            with self.receiver.path.open("a") as fh:
                fh.write(line + "\n")
            self.receiver.requests += 1
            self.receiver.logs += sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)
        return logs_service_pb2.ExportLogsServiceResponse()


class Receiver:
    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = path
        self.port = port or free_port()
        self.lock = threading.Lock()
        self.requests = 0
        self.spans = 0
        self.logs = 0
        self._server: grpc.Server | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Receiver:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Servicer(self), server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_LogsServicer(self), server)
        bound = server.add_insecure_port(self.endpoint)
        assert bound == self.port
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait()
            self._server = None

    def forward(self, journal: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
        """``loom-otel forward journal`` to this receiver over OTLP/gRPC, in a subprocess."""
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "loom_otel.cli",
                "forward",
                str(journal),
                "--inner",
                "otlp_proto_grpc",
                "--timeout",
                "60",
            ],
            env={
                **env,
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{self.endpoint}",
                "OTEL_EXPORTER_OTLP_INSECURE": "true",
            },
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
