"""Instrument with a meter provider too, and read metrics back from an in-memory reader."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from loom_otel.core import ReasoningConfig
from loom_otel.core._calls._instrumentor import ReasoningInstrumentor
from loom_otel.core._runtime._config import reset_runtime
from loom_otel.testing import Telemetry


@contextlib.contextmanager
def metered(
    instrumentor: type[ReasoningInstrumentor], config: ReasoningConfig | None = None
) -> Iterator[tuple[Telemetry, InMemoryMetricReader]]:
    """``instrument(tracer_provider=..., meter_provider=...)`` with in-memory readers; uninstrumented after."""
    telemetry = Telemetry.in_memory()
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    reset_runtime()
    instance = instrumentor()
    instance.instrument(tracer_provider=telemetry.provider, meter_provider=meters, config=config, skip_dep_check=True)
    try:
        yield telemetry, reader
    finally:
        instance.uninstrument()
        reset_runtime()


def points(reader: InMemoryMetricReader) -> dict[str, tuple[Any, list[Any]]]:
    """Each metric by name: (the metric, its data points)."""
    data = reader.get_metrics_data()
    found: dict[str, tuple[Any, list[Any]]] = {}
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found[metric.name] = (metric, list(metric.data.data_points))
    return found
