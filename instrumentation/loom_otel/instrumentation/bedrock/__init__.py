"""OpenTelemetry instrumentation for Amazon Bedrock Converse (boto3 ``bedrock-runtime``) that keeps
model reasoning as audit evidence.

Usage::

    from loom_otel.core import ReasoningConfig
    from loom_otel.instrumentation.bedrock import BedrockInstrumentor

    BedrockInstrumentor().instrument(config=ReasoningConfig(store="file:///var/lib/app/reasoning"))

Without ``config`` everything comes from the ``LOOM_OTEL_*`` environment (``opentelemetry-instrument``).
"""

from __future__ import annotations

from loom_otel.core.vendor import ReasoningInstrumentor
from loom_otel.instrumentation.bedrock._adapter import BedrockAdapter
from loom_otel.instrumentation.bedrock._wrappers import make_api_call
from loom_otel.instrumentation.bedrock.package import _instruments
from loom_otel.instrumentation.bedrock.version import __version__
from loom_otel.live import LiveChannel

__all__ = ["BedrockInstrumentor"]


class BedrockInstrumentor(ReasoningInstrumentor):
    """Captures ``reasoningContent`` blocks of every ``converse`` and ``converse_stream`` call."""

    provider = "aws.bedrock"
    sdk = "botocore"
    instruments = _instruments
    wraps = (("botocore.client", "BaseClient._make_api_call", make_api_call),)
    adapter = BedrockAdapter
    version = __version__
    live_view = LiveChannel
