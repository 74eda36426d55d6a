"""An exporter that writes what a collector's ``file`` exporter writes: one OTLP JSON request a line.

Used by the demo as the downstream of the chained exporter (a stand-in for a collector hop with an
archive), and by tests; ``loom-otel verify`` and ``read_reasoning`` read its output.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from loom_otel.core._runtime._fork import renew_after_fork

__all__ = ["OtlpJsonFileExporter"]


class OtlpJsonFileExporter(SpanExporter):
    """Appends each export as one OTLP/JSON ``ExportTraceServiceRequest`` line (needs ``loom-otel[otlp]``)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from google.protobuf.json_format import MessageToJson
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.path = Path(path)
        self._encode = encode_spans
        self._to_json = MessageToJson
        self._lock = threading.Lock()
        renew_after_fork(self)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            line = self._to_json(self._encode(spans), indent=None).replace("\n", "")
            with self._lock, self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except Exception:
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS
