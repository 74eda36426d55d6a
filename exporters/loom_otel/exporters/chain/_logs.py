"""Journal records as OTLP log records: how a record no model-call span of a sampled call can hold travels.

A checkpoint, a tombstone, and a capture whose call was not sampled have no trace to join: sent as
spans they would be root traces of their own (``loom.audit.record``), counted and listed by tracing
backends among the application's calls. They travel on the logs signal instead, which the
collector receives and archives (its ``file`` exporter, for ``verify --against``) and which tracing
views do not list. Each record is one log record: ``event_name`` and ``body`` the event name the
record would have had on a span (``record_from_event`` rebuilds the record from it, the attributes
and the timestamp), the event's attributes (same chain fields), ``timestamp`` the record's time, the
application's resource. Records are built directly as SDK ``ReadableLogRecord`` objects: no logger
provider, no attribute limits (a cut attribute would break the record's hash).

The log exporter is the one registered in the ``opentelemetry_logs_exporter`` entry-point group
under the inner span exporter's name (``otlp_proto_http``, ``otlp_proto_grpc``: the same
``OTEL_EXPORTER_OTLP_*`` settings; used when it sends to the inner exporter's collector); an inner
exporter with no log counterpart (a vendor's, ``zipkin_json``) keeps sending these records as root
spans.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import Final
from urllib.parse import urlsplit

from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from loom_otel.core.journal import event_for_record
from loom_otel.exporters.chain._inner import inner_name

__all__ = ["LOGS_GROUP", "beside", "build_log_records", "logs_exporter_named", "logs_from_environment"]

LOGS_GROUP: Final = "opentelemetry_logs_exporter"
_SCOPE: Final = InstrumentationScope("loom_otel.exporters.chain")
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def logs_exporter_named(name: str) -> LogRecordExporter | None:
    """The log exporter registered under ``name`` (built with no arguments), ``None`` if none is."""
    found = list(entry_points(group=LOGS_GROUP, name=name))
    if not found:
        return None
    exporter = found[0].load()()
    return exporter if isinstance(exporter, LogRecordExporter) else None


def build_log_records(records: Sequence[Mapping[str, object]], resource: Resource) -> list[ReadableLogRecord]:
    """One log record per journal record (malformed records are skipped)."""
    built: list[ReadableLogRecord] = []
    now = time.time_ns()
    for record in records:
        try:
            name, attributes, time_ns = event_for_record(record)
        except (KeyError, ValueError, TypeError):
            continue
        log = LogRecord(timestamp=time_ns, observed_timestamp=now, body=name, attributes=attributes, event_name=name)
        built.append(ReadableLogRecord(log_record=log, resource=resource, instrumentation_scope=_SCOPE))
    return built


def logs_from_environment(name: str | None = None) -> LogRecordExporter | None:
    """The log exporter beside the inner span exporter named by ``name`` (else ``LOOM_OTEL_CHAIN_INNER``,
    else OTLP/HTTP): the one registered under the same name, ``None`` when there is none."""
    return logs_exporter_named(inner_name(name))


def beside(inner: object, logs: LogRecordExporter | None) -> LogRecordExporter | None:
    """``logs`` when it sends to the same collector (host and port) as ``inner``, else ``None``: settings
    that send traces somewhere and leave logs at the default endpoint must not send records where
    nothing listens."""
    if logs is None or _place(inner) != _place(logs):
        return None
    return logs


def _place(exporter: object) -> tuple[str | None, int | None] | None:
    """Host and port of an OTLP exporter's endpoint (its ``_endpoint``), ``None`` when it names none."""
    endpoint = getattr(exporter, "_endpoint", None)
    if not isinstance(endpoint, str) or not endpoint:
        return None
    try:
        parts = urlsplit(endpoint if "://" in endpoint else f"//{endpoint}")
        return parts.hostname, parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return (endpoint, None)
