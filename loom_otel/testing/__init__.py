"""Public test helpers: in-memory telemetry, an instrument-then-restore context, the vendor simulator.

``from loom_otel.testing import simulator`` gives the built-in vendor simulator (Anthropic, Gemini,
OpenAI-compatible), in-process as an ``httpx2`` transport or as an HTTP server.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loom_otel.core._runtime import _config
from loom_otel.core._runtime._config import ReasoningConfig
from loom_otel.core._runtime._lifecycle import close_everything
from loom_otel.testing._otlp_file import OtlpJsonFileExporter

__all__ = ["OtlpJsonFileExporter", "Telemetry", "find_leaks", "instrumented", "reasoning_events", "reset_runtime"]


@dataclass(slots=True)
class Telemetry:
    """An SDK tracer provider whose finished spans are kept in memory."""

    provider: TracerProvider
    exporter: InMemorySpanExporter

    @classmethod
    def in_memory(cls) -> Telemetry:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        return cls(provider, exporter)

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())


def reset_runtime() -> None:
    """Close what loom-otel opened in this process (every store's pending blobs synced and its ready
    directories removed, every audit journal checkpointed, synced and released: a temporary directory
    holding them can be removed), then forget the process default configuration, the shared stores and
    which one-time warnings were given. Instrumentations stay as they are; the next write reopens."""
    close_everything()
    _config.reset_runtime()


def reasoning_events(spans: Sequence[ReadableSpan], name: str = "loom.reasoning.captured") -> list[dict[str, Any]]:
    """The attributes of every event called ``name``, in span order."""
    return [dict(event.attributes or {}) for span in spans for event in span.events if event.name == name]


@contextlib.contextmanager
def instrumented(
    *instrumentors: BaseInstrumentor,
    config: ReasoningConfig | None = None,
    telemetry: Telemetry | None = None,
    environ: dict[str, str] | None = None,
) -> Iterator[Telemetry]:
    """Instrument with an in-memory tracer provider, yield it, then uninstrument and restore the
    environment (``environ`` entries are set for the duration; ``None`` values are removed)."""
    telemetry = telemetry or Telemetry.in_memory()
    saved = dict(os.environ)
    if environ:
        for key, value in environ.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    _config.reset_runtime()
    try:
        for instrumentor in instrumentors:
            instrumentor.instrument(tracer_provider=telemetry.provider, config=config, skip_dep_check=True)
        yield telemetry
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
        os.environ.clear()
        os.environ.update(saved)
        reset_runtime()


def find_leaks(
    secrets: Sequence[str | bytes],
    *,
    spans: Sequence[ReadableSpan] = (),
    directories: Sequence[str | os.PathLike[str]] = (),
    texts: Sequence[str] = (),
) -> list[str]:
    """Where any of ``secrets`` (canary strings, signatures) appears: exported spans (as OTLP-ish JSON),
    every file below ``directories`` (journals, checkpoints), and free ``texts`` (logs, exception
    messages, CLI output). An empty list means no leak."""
    needles = [s.encode() if isinstance(s, str) else s for s in secrets if s]
    found: list[str] = []

    def scan(where: str, data: bytes) -> None:
        found.extend(f"{where}: {needle[:12]!r}..." for needle in needles if needle in data)

    for span in spans:
        scan(f"span {span.name}", span.to_json().encode())
    for directory in directories:
        for path in sorted(Path(directory).rglob("*")):
            if path.is_file():
                scan(str(path), path.read_bytes())
    for index, text in enumerate(texts):
        scan(f"text[{index}]", text.encode())
    return found
