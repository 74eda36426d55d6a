"""Instrument with a meter provider too, and read metrics back from an in-memory reader."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from wrapt import wrap_function_wrapper

from loom_otel.core import ReasoningConfig
from loom_otel.core._call import ReasoningHandler
from loom_otel.core._config import reset_runtime, runtime_for
from loom_otel.core._instrumentor import ReasoningInstrumentor
from loom_otel.testing import Telemetry


@contextlib.contextmanager
def metered(
    instrumentor: type[ReasoningInstrumentor], config: ReasoningConfig | None = None
) -> Iterator[tuple[Telemetry, InMemoryMetricReader]]:
    """What ``instrument(tracer_provider=..., meter_provider=...)`` does once the instrumentor passes
    ``meter_provider`` on to ``ReasoningHandler`` (the lead's wiring): the same wraps, the same handler."""
    telemetry = Telemetry.in_memory()
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    reset_runtime()
    runtime = runtime_for(config)
    handler = ReasoningHandler(telemetry.provider, runtime, instrumentor.__module__, "0.1.0", meters)
    if runtime.enabled and instrumentor.continuation is not None:
        handler.continuation = instrumentor.continuation(runtime)
    for module, name, factory in instrumentor.wraps:
        wrap_function_wrapper(module, name, factory(handler))
    try:
        yield telemetry, reader
    finally:
        for module, name, _ in instrumentor.wraps:
            cls, method = name.split(".")
            unwrap(f"{module}.{cls}", method)
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
