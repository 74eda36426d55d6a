"""The inner exporter the chained exporter forwards to, from ``LOOM_OTEL_CHAIN_INNER``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter, SpanExportResult

from loom_otel.core import environment_variables as env
from loom_otel.core._warnings import warn

__all__ = ["INNER_CHOICES", "NoneSpanExporter", "inner_from_environment"]

INNER_CHOICES: Final = ("otlp_proto_http", "otlp_proto_grpc", "console", "none")
DEFAULT_INNER: Final = "otlp_proto_http"


class NoneSpanExporter(SpanExporter):
    """``LOOM_OTEL_CHAIN_INNER=none``: keep the journal, send nothing (everything counts as delivered)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def inner_from_environment(name: str | None = None) -> SpanExporter:
    """Build the inner exporter named by ``name``, else ``LOOM_OTEL_CHAIN_INNER``, else OTLP/HTTP.

    The OTLP exporters read the standard ``OTEL_EXPORTER_OTLP_*`` variables themselves. A bad value
    warns (naming the variable) and falls back to the default.
    """
    choice = (name or os.environ.get(env.LOOM_OTEL_CHAIN_INNER) or DEFAULT_INNER).strip().lower()
    if choice not in INNER_CHOICES:
        warn(f"{env.LOOM_OTEL_CHAIN_INNER}={choice!r} is not one of {', '.join(INNER_CHOICES)}; using the default")
        choice = DEFAULT_INNER
    if choice == "otlp_proto_http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        return HttpExporter()
    if choice == "otlp_proto_grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter()
    if choice == "console":
        return ConsoleSpanExporter()
    return NoneSpanExporter()
