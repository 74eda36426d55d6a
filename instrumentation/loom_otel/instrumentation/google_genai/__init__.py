"""OpenTelemetry instrumentation for the Google GenAI SDK that keeps model reasoning as audit evidence.

Usage::

    from loom_otel.core import ReasoningConfig
    from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor

    GoogleGenAiInstrumentor().instrument(config=ReasoningConfig(store="file:///var/lib/app/reasoning"))

Without ``config`` everything comes from the ``LOOM_OTEL_*`` environment (``opentelemetry-instrument``).
"""

from __future__ import annotations

from typing import Final

from loom_otel.core.vendor import ReasoningInstrumentor, Wrap
from loom_otel.instrumentation.google_genai._adapter import GeminiAdapter
from loom_otel.instrumentation.google_genai._wrappers import (
    async_models_generate_content,
    async_models_generate_content_hop,
    async_models_generate_content_stream,
    async_models_generate_content_stream_hop,
    models_generate_content,
    models_generate_content_hop,
    models_generate_content_stream,
    models_generate_content_stream_hop,
)
from loom_otel.instrumentation.google_genai.package import _instruments
from loom_otel.instrumentation.google_genai.version import __version__
from loom_otel.live import LiveChannel

__all__ = ["GoogleGenAiInstrumentor"]

_MODELS: Final = "google.genai.models"

# The public methods own the span (chats call them); the private per-request methods see every HTTP
# request of automatic function calling and automatic continuation.
_WRAPS: Final[tuple[Wrap, ...]] = (
    (_MODELS, "Models.generate_content", models_generate_content),
    (_MODELS, "Models.generate_content_stream", models_generate_content_stream),
    (_MODELS, "Models._generate_content", models_generate_content_hop),
    (_MODELS, "Models._generate_content_stream", models_generate_content_stream_hop),
    (_MODELS, "AsyncModels.generate_content", async_models_generate_content),
    (_MODELS, "AsyncModels.generate_content_stream", async_models_generate_content_stream),
    (_MODELS, "AsyncModels._generate_content", async_models_generate_content_hop),
    (_MODELS, "AsyncModels._generate_content_stream", async_models_generate_content_stream_hop),
)


class GoogleGenAiInstrumentor(ReasoningInstrumentor):
    """Captures thought summaries and thought signatures of every ``generate_content`` call (sync, async,
    streamed, chats, every request of automatic function calling), on the Gemini API and Vertex AI."""

    provider = "google-genai"
    sdk = "google.genai"
    instruments = _instruments
    wraps = _WRAPS
    adapter = GeminiAdapter
    version = __version__
    live_view = LiveChannel
