"""The GenAI client metrics (semantic conventions): token usage, operation duration, time to first chunk.

Built once per instrumentor from the ``meter_provider`` it was given (the global one otherwise) and
recorded by ``ModelCall`` when a call ends. Attributes are the conventions' for each metric: operation,
provider, request and response model, server address and port, and ``error.type`` on a failed call's
duration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from opentelemetry import metrics
from opentelemetry.metrics import MeterProvider

from loom_otel.core._calls._semconv import SCHEMA_URL
from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._evidence._attributes import AttributeValue

__all__ = ["TOKEN_BUCKETS", "DURATION_BUCKETS", "GenAiMetrics", "metric_attributes"]

TOKEN_BUCKETS: Final = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_KEYS: Final = (
    attr.GEN_AI_OPERATION_NAME,
    attr.GEN_AI_PROVIDER_NAME,
    attr.GEN_AI_REQUEST_MODEL,
    attr.SERVER_ADDRESS,
    attr.SERVER_PORT,
)


def metric_attributes(span_attributes: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
    """The metric attributes a request's span attributes carry (the response model is added at the end)."""
    return {key: span_attributes[key] for key in _KEYS if key in span_attributes}


class GenAiMetrics:
    """The three histograms, with the conventions' names, units and bucket boundaries."""

    __slots__ = ("duration", "first_chunk", "tokens")

    def __init__(self, meter_provider: MeterProvider | None, name: str, version: str) -> None:
        meter = metrics.get_meter(name, version, meter_provider, schema_url=SCHEMA_URL)
        self.tokens = meter.create_histogram(
            attr.METRIC_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS),
        )
        self.duration = meter.create_histogram(
            attr.METRIC_OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self.first_chunk = meter.create_histogram(
            attr.METRIC_TIME_TO_FIRST_CHUNK,
            unit="s",
            description="Time to receive the first chunk of a streamed response.",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )

    def record_end(
        self,
        attributes: dict[str, AttributeValue],
        seconds: float,
        usage: Mapping[str, AttributeValue],
    ) -> None:
        """One call ended: its duration, and its input and output token counts when the vendor said them."""
        self.duration.record(seconds, attributes)
        for key, token_type in ((attr.GEN_AI_USAGE_INPUT_TOKENS, "input"), (attr.GEN_AI_USAGE_OUTPUT_TOKENS, "output")):
            count = usage.get(key)
            if isinstance(count, int) and not isinstance(count, bool):
                self.tokens.record(count, {**attributes, attr.GEN_AI_TOKEN_TYPE: token_type})
