"""OpenTelemetry instrumentation for the Google GenAI SDK that keeps model reasoning as audit evidence.

Usage::

    from loom_otel.core import ReasoningConfig
    from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor

    GoogleGenAiInstrumentor().instrument(config=ReasoningConfig(store="file:///var/lib/app/reasoning"))

Without ``config`` everything comes from the ``LOOM_OTEL_*`` environment (``opentelemetry-instrument``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from loom_otel.core._call import ReasoningHandler
from loom_otel.core._config import runtime_for
from loom_otel.instrumentation.google_genai._continuation import GeminiContinuation
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

__all__ = ["GoogleGenAiInstrumentor"]

_MODELS: Final = "google.genai.models"

# The public methods own the span (chats call them); the private per-request methods see every HTTP
# request of automatic function calling and automatic continuation.
_WRAPS: Final = (
    (_MODELS, "Models.generate_content", models_generate_content),
    (_MODELS, "Models.generate_content_stream", models_generate_content_stream),
    (_MODELS, "Models._generate_content", models_generate_content_hop),
    (_MODELS, "Models._generate_content_stream", models_generate_content_stream_hop),
    (_MODELS, "AsyncModels.generate_content", async_models_generate_content),
    (_MODELS, "AsyncModels.generate_content_stream", async_models_generate_content_stream),
    (_MODELS, "AsyncModels._generate_content", async_models_generate_content_hop),
    (_MODELS, "AsyncModels._generate_content_stream", async_models_generate_content_stream_hop),
)


class GoogleGenAiInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Captures thought summaries and thought signatures of every ``generate_content`` call (sync, async,
    streamed, chats, every request of automatic function calling), on the Gemini API and Vertex AI."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        runtime = runtime_for(kwargs.get("config"))
        runtime.boot_warning("google-genai")
        handler = ReasoningHandler(kwargs.get("tracer_provider"), runtime, __name__, __version__)
        if runtime.enabled:
            handler.continuation = GeminiContinuation(runtime)
        for module, name, factory in _WRAPS:
            wrap_function_wrapper(module, name, factory(handler))

    def _uninstrument(self, **kwargs: Any) -> None:
        for module, name, _ in _WRAPS:
            cls, method = name.split(".")
            unwrap(f"{module}.{cls}", method)
