"""``loom.audit.record`` spans: how a journal record travels when the span pipeline lost its span.

The spans are made by a private SDK ``TracerProvider`` (always sampled, explicit limits so that no
``OTEL_*_LIMIT`` truncates a hashed attribute) and collected by the SDK's in-memory exporter: no
``ReadableSpan`` is assembled by hand. Each span is named ``loom.audit.record`` (kind ``INTERNAL``,
``openinference.span.kind`` ``CHAIN`` so that OpenInference backends do not show it as unknown) and
holds ``loom.audit.origin/seq/type``, ``loom.execution.id`` when the record names one, and one event,
the very event the record would have had on its model-call span (same name, same attributes, same
chain fields, timestamp = record time).

A capture record that says where it was made (``loom.call.trace_id`` / ``span_id`` / ``sampled``)
and whose call was sampled becomes a child of its model-call span, in the call's trace; otherwise
(unsampled call, checkpoint, older record) it is a root span: a parent the backend never received
would make an orphan. The chained exporter sends such records as log records instead (``_logs``)
when it has a log exporter: a root span is a trace of its own in every tracing view. Sent as spans all
the same (no log exporter, or a downstream that refuses logs, such as Arize Phoenix), they go *aside*:
their resource names the OpenInference project ``<the application's project>-audit`` (``default-audit``
when it names none), so Phoenix lists them in a project of their own, never among the calls.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Final

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from loom_otel.core.journal import RECORD_SPAN, event_for_record
from loom_otel.core.journal import attributes as attr
from loom_otel.core.runtime import renew_after_fork

__all__ = ["AUDIT_PROJECT_SUFFIX", "PROJECT_KEY", "RecordSpans", "aside_resource", "joins_a_trace", "parent_of"]

_KIND_KEY: Final = "openinference.span.kind"
_KIND: Final = "CHAIN"
PROJECT_KEY: Final = "openinference.project.name"
"""The resource attribute Arize Phoenix files a span's trace under (its project)."""
AUDIT_PROJECT_SUFFIX: Final = "-audit"
_DEFAULT_PROJECT: Final = "default"

_LIMITS = SpanLimits(
    max_span_attributes=16,
    max_events=4,
    max_event_attributes=128,
    max_links=0,
    max_attribute_length=SpanLimits.UNSET,
)


def parent_of(record: Mapping[str, object]) -> Context:
    """The record's model-call span as a remote parent when that call was sampled, else a root context."""
    attributes = record.get("attributes")
    if not isinstance(attributes, Mapping) or attributes.get(attr.CALL_SAMPLED) is not True:
        return Context()
    try:
        trace_id = int(str(attributes[attr.CALL_TRACE_ID]), 16)
        span_id = int(str(attributes[attr.CALL_SPAN_ID]), 16)
    except (KeyError, ValueError):
        return Context()
    parent = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    if not parent.is_valid:
        return Context()
    return trace.set_span_in_context(NonRecordingSpan(parent), Context())


def joins_a_trace(record: Mapping[str, object]) -> bool:
    """Whether the record's span would be a child of its (sampled) model-call span, not a root span."""
    return bool(parent_of(record))


def aside_resource(resource: Resource) -> Resource:
    """``resource`` naming the project beside its own (``<project>-audit``), for records no trace holds."""
    project = resource.attributes.get(PROJECT_KEY) or _DEFAULT_PROJECT
    return resource.merge(Resource({PROJECT_KEY: f"{project}{AUDIT_PROJECT_SUFFIX}"}))


class RecordSpans:
    """Builds finished ``loom.audit.record`` spans for journal records."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._resource: Resource | None = None
        # Made now, not at the first resend: that may come at interpreter exit, when the resource
        # detectors can no longer start the threads they run in.
        self._default_resource = Resource.create()
        self._providers: dict[bool, TracerProvider] = {}
        self._collector = InMemorySpanExporter()
        renew_after_fork(self, RecordSpans._after_fork_in_child)

    def _after_fork_in_child(self) -> None:
        """A new private provider: the SDK's locks in the old one may be held by a parent thread."""
        self._providers = {}
        self._collector = InMemorySpanExporter()

    def use_resource(self, resource: Resource) -> None:
        """The resource of the application's spans: resent records go where their spans went (until
        the first resend; before any span is seen, the resource the environment describes)."""
        if self._resource is None:
            self._resource = resource

    @property
    def resource(self) -> Resource:
        """The resource records are sent with (their spans', or their log records')."""
        return self._resource or self._default_resource

    def build(self, records: Sequence[Mapping[str, object]], *, aside: bool = False) -> list[ReadableSpan]:
        """One finished span per record (malformed records are skipped); ``aside``: with the resource of
        the audit project (``aside_resource``), for records no trace holds."""
        with self._lock:
            provider = self._providers.get(aside)
            if provider is None:
                provider = TracerProvider(
                    resource=aside_resource(self.resource) if aside else self.resource,
                    sampler=ALWAYS_ON,
                    span_limits=_LIMITS,
                    shutdown_on_exit=False,
                )
                provider.add_span_processor(SimpleSpanProcessor(self._collector))
                self._providers[aside] = provider
            tracer = provider.get_tracer("loom_otel.exporters.chain")
            for record in records:
                try:
                    name, attributes, time_ns = event_for_record(record)
                except (KeyError, ValueError, TypeError):
                    continue
                span_attributes = {
                    attr.AUDIT_ORIGIN: attributes[attr.AUDIT_ORIGIN],
                    attr.AUDIT_SEQ: attributes[attr.AUDIT_SEQ],
                    attr.AUDIT_TYPE: str(record["type"]),
                    _KIND_KEY: _KIND,
                }
                execution = attributes.get(attr.EXECUTION_ID)
                if isinstance(execution, str):
                    span_attributes[attr.EXECUTION_ID] = execution
                span = tracer.start_span(
                    RECORD_SPAN,
                    context=parent_of(record),
                    kind=SpanKind.INTERNAL,
                    start_time=time_ns,
                    attributes=span_attributes,
                )
                span.add_event(name, attributes, timestamp=time_ns)
                span.end(end_time=time_ns)
            spans = list(self._collector.get_finished_spans())
            self._collector.clear()
            return spans
