"""The handler every wrapper of one instrumentor shares: tracer, GenAI metrics, runtime, vendor adapter,
and the watcher of its calls (the live view, given from outside core)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from loom_otel.core._calls._adapter import VendorAdapter
from loom_otel.core._calls._metrics import GenAiMetrics
from loom_otel.core._calls._model_call import ModelCall, RequestInfo, current_call
from loom_otel.core._calls._observer import CallObserver
from loom_otel.core._calls._peers import foreign_model_span
from loom_otel.core._calls._semconv import SCHEMA_URL
from loom_otel.core._runtime._config import Runtime

__all__ = ["ObserverFactory", "ReasoningHandler"]

ObserverFactory = Callable[[ModelCall], CallObserver]
"""Starts the observer of one call; the watcher's per-handler state lives in it (``CallObserver``)."""


class ReasoningHandler:
    """Shared by every wrapper of one instrumentor: the tracer, the GenAI metrics, the process runtime,
    the vendor adapter; ``observe`` (the live view's, set only when live is on) watches its calls."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        runtime: Runtime,
        name: str,
        version: str,
        adapter: VendorAdapter[Any],
        *,
        meter_provider: MeterProvider | None = None,
        observe: ObserverFactory | None = None,
    ) -> None:
        self.runtime = runtime
        self.adapter = adapter
        self.tracer = trace.get_tracer(name, version, tracer_provider, schema_url=SCHEMA_URL)
        self.metrics = GenAiMetrics(meter_provider, name, version)
        self.observe = observe

    def call(self, request: RequestInfo, *, peer_outside: bool = False) -> ModelCall:
        """A call whose span starts now (the request is about to be sent), or whose events go on the
        model-call span another GenAI instrumentation already started for it (one span per call).
        ``peer_outside``: another GenAI instrumentation wraps the method outside loom-otel (its span is
        the call's GenAI span even where it is not made current): loom-otel's span then carries its
        events and identity but no GenAI attributes, so no backend counts the call twice."""
        current = current_call()
        shared = foreign_model_span(current.span if current is not None else None)
        return ModelCall(self, request, shared, genai=not peer_outside)
