"""The chained span exporter: forwards spans to an inner exporter and guarantees that every audit
journal record reaches the downstream at least once (``ChainedSpanExporter``; entry point
``loom_chain`` in ``opentelemetry_traces_exporter``)."""

from __future__ import annotations

from loom_otel.exporters.chain._exporter import ChainedSpanExporter

__all__ = ["ChainedSpanExporter"]
