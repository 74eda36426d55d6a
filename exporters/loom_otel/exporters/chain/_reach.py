"""Whether the inner exporter's collector answers at all, asked before delivering at exit and, while
the process runs, before the first send and after a failed one.

An OTLP exporter whose collector is not running retries each batch with backoff for up to
``OTEL_EXPORTER_OTLP_TIMEOUT`` (10 s), logging a "Transient error" line per retry; at exit the span
pipeline's flush, the delivery of what is owed and the tracer provider's shutdown each pay that again.
One TCP connection to the exporter's endpoint tells a collector that is not there (refused, no route,
no answer within ``PROBE_SECONDS``) without sending anything. Exporters that name no endpoint (a
console, a vendor's, a test's) are taken as reachable: their own failures bound themselves.
"""

from __future__ import annotations

import socket
from typing import Final
from urllib.parse import urlsplit

from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["PROBE_SECONDS", "endpoint_of", "unreachable"]

PROBE_SECONDS: Final = 1.0
"""How long the probe waits for the collector to accept a connection."""
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def endpoint_of(exporter: SpanExporter) -> str | None:
    """The endpoint an OTLP exporter sends to (its ``_endpoint``: a URL for OTLP/HTTP, ``host:port``
    for OTLP/gRPC), or ``None`` when it names none."""
    endpoint = getattr(exporter, "_endpoint", None)
    return endpoint if isinstance(endpoint, str) and endpoint else None


def unreachable(endpoint: str, timeout: float = PROBE_SECONDS) -> bool:
    """Whether nothing accepts a TCP connection at ``endpoint`` within ``timeout`` seconds (an
    endpoint that cannot be parsed is not judged: ``False``)."""
    try:
        parts = urlsplit(endpoint if "://" in endpoint else f"//{endpoint}")
        host, port = parts.hostname, parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:  # a bad port, an unclosed IPv6 bracket
        return False
    if not host or port is None:
        return False
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return False
    except OSError:
        return True
