"""OpenTelemetry instrumentation for the OpenAI SDK (and OpenAI-compatible reasoning servers such as
DeepSeek and vLLM) that keeps model reasoning as audit evidence.

Usage::

    from loom_otel.core import ReasoningConfig
    from loom_otel.instrumentation.openai import OpenAiInstrumentor

    OpenAiInstrumentor().instrument(config=ReasoningConfig(store="file:///var/lib/app/reasoning"))

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
from loom_otel.instrumentation.openai._continuation import OpenAiContinuation
from loom_otel.instrumentation.openai._wrappers import (
    async_chat_completions_create,
    async_responses_create,
    chat_completions_create,
    responses_create,
)
from loom_otel.instrumentation.openai.package import _instruments
from loom_otel.instrumentation.openai.version import __version__

__all__ = ["OpenAiInstrumentor"]

_CHAT: Final = "openai.resources.chat.completions.completions"
_RESPONSES: Final = "openai.resources.responses.responses"

# ``stream()`` helpers call ``create(stream=True)``; ``parse()`` posts by itself.
_WRAPS: Final = (
    (_CHAT, "Completions.create", chat_completions_create),
    (_CHAT, "Completions.parse", chat_completions_create),
    (_CHAT, "AsyncCompletions.create", async_chat_completions_create),
    (_CHAT, "AsyncCompletions.parse", async_chat_completions_create),
    (_RESPONSES, "Responses.create", responses_create),
    (_RESPONSES, "Responses.parse", responses_create),
    (_RESPONSES, "AsyncResponses.create", async_responses_create),
    (_RESPONSES, "AsyncResponses.parse", async_responses_create),
)


class OpenAiInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Captures ``reasoning_content`` / ``reasoning`` of Chat Completions and the reasoning items of the
    Responses API (sync, async, streamed, ``stream()`` and ``parse()`` helpers)."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        runtime = runtime_for(kwargs.get("config"))
        runtime.boot_warning("openai")
        handler = ReasoningHandler(kwargs.get("tracer_provider"), runtime, __name__, __version__)
        if runtime.enabled:
            handler.continuation = OpenAiContinuation(runtime)
        for module, name, factory in _WRAPS:
            wrap_function_wrapper(module, name, factory(handler))

    def _uninstrument(self, **kwargs: Any) -> None:
        for module, name, _ in _WRAPS:
            cls, method = name.split(".")
            unwrap(f"{module}.{cls}", method)
