"""``_reach``: how the chained exporter tells, before delivering at exit, a collector that is not
running from one that answers (a real listening socket, and a port nothing listens on)."""

from __future__ import annotations

import socket

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

from loom_otel.exporters.chain._inner import NoneSpanExporter
from loom_otel.exporters.chain._reach import endpoint_of, unreachable


def test_a_listening_endpoint_is_reachable_and_a_closed_one_is_not() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        for endpoint in (f"http://127.0.0.1:{port}/v1/traces", f"127.0.0.1:{port}"):
            assert not unreachable(endpoint)
    assert unreachable(f"http://127.0.0.1:{port}/v1/traces")  # closed now: refused
    assert unreachable(f"127.0.0.1:{port}")


@pytest.mark.parametrize("endpoint", ["http://[::1/v1/traces", "http://host:notaport/", "not an endpoint"])
def test_an_endpoint_that_does_not_parse_is_not_judged(endpoint: str) -> None:
    assert not unreachable(endpoint)


def test_the_endpoints_of_the_otlp_exporters() -> None:
    assert endpoint_of(HttpExporter(endpoint="http://collector:4318/v1/traces")) == "http://collector:4318/v1/traces"
    assert endpoint_of(GrpcExporter(endpoint="http://collector:4317", insecure=True)) == "collector:4317"
    assert endpoint_of(NoneSpanExporter()) is None
