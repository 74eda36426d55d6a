"""A newcomer's application: loom-otel instrumented with whatever the environment says (often
nothing), the Anthropic SDK against the vendor simulator. Run as a subprocess by ``test_failure_policy``.

``python newcomer_app.py calls N``: instrument, make N calls.
``python newcomer_app.py reinstrument``: instrument, call, uninstrument, flip ``LOOM_OTEL_REASONING``
(``false`` <-> unset), instrument again, call.

Prints one JSON object: the calls that returned, the capture events per instrumentation, the
exception ``instrument()`` raised (type and message) if it did, and every warning issued (category,
file, message). Nothing is caught around the model calls: an exception there ends the process.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loom_otel.core._evidence import _attributes as attr
from loom_otel.core.exceptions import LoomOtelError
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing.simulator import Simulator

CANARY = "CANARY-newcomer-reasoning-91d0"
REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 4096,
    "thinking": {"type": "enabled", "budget_tokens": 2048},
    "messages": [{"role": "user", "content": "Should I pack an umbrella for Lyon tomorrow?"}],
}


def captured(exporter: InMemorySpanExporter) -> int:
    return sum(1 for span in exporter.get_finished_spans() for e in span.events if e.name == attr.EVENT_CAPTURED)


def run(mode: str, count: int) -> dict[str, Any]:
    client = Simulator(reasoning_text=CANARY).anthropic_client()
    provider, exporter = TracerProvider(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    report: dict[str, Any] = {"returned": 0, "captured": []}
    phases = 2 if mode == "reinstrument" else 1
    for phase in range(phases):
        if phase:
            AnthropicInstrumentor().uninstrument()
            if os.environ.get("LOOM_OTEL_REASONING") == "false":
                del os.environ["LOOM_OTEL_REASONING"]
            else:
                os.environ["LOOM_OTEL_REASONING"] = "false"
        try:
            AnthropicInstrumentor().instrument(tracer_provider=provider)
        except LoomOtelError as exc:
            report["instrument_error"] = [type(exc).__name__, str(exc)]
            return report
        before = captured(exporter)
        for _ in range(count):
            client.messages.create(**REQUEST)
            report["returned"] += 1
        report["captured"].append(captured(exporter) - before)
    return report


if __name__ == "__main__":
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    result["warnings"] = [[w.category.__name__, w.filename, str(w.message)] for w in caught]
    print(json.dumps(result))
