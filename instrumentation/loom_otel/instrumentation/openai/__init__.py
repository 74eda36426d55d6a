"""OpenTelemetry instrumentation for the OpenAI SDK (and OpenAI-compatible reasoning servers such as
DeepSeek and vLLM) that keeps model reasoning as audit evidence.

Usage::

    from loom_otel.core import ReasoningConfig
    from loom_otel.instrumentation.openai import OpenAiInstrumentor

    OpenAiInstrumentor().instrument(config=ReasoningConfig(store="file:///var/lib/app/reasoning"))

Without ``config`` everything comes from the ``LOOM_OTEL_*`` environment (``opentelemetry-instrument``).
"""

from __future__ import annotations

from typing import Final

from loom_otel.core.vendor import ReasoningInstrumentor, Wrap
from loom_otel.instrumentation.openai._adapter import OpenAiAdapter
from loom_otel.instrumentation.openai._wrappers import (
    async_chat_completions_create,
    async_responses_create,
    chat_completions_create,
    responses_create,
)
from loom_otel.instrumentation.openai.package import _instruments
from loom_otel.instrumentation.openai.version import __version__
from loom_otel.live import LiveChannel

__all__ = ["OpenAiInstrumentor"]

_CHAT: Final = "openai.resources.chat.completions.completions"
_RESPONSES: Final = "openai.resources.responses.responses"

# ``stream()`` helpers call ``create(stream=True)``; ``parse()`` posts by itself.
_WRAPS: Final[tuple[Wrap, ...]] = (
    (_CHAT, "Completions.create", chat_completions_create),
    (_CHAT, "Completions.parse", chat_completions_create),
    (_CHAT, "AsyncCompletions.create", async_chat_completions_create),
    (_CHAT, "AsyncCompletions.parse", async_chat_completions_create),
    (_RESPONSES, "Responses.create", responses_create),
    (_RESPONSES, "Responses.parse", responses_create),
    (_RESPONSES, "AsyncResponses.create", async_responses_create),
    (_RESPONSES, "AsyncResponses.parse", async_responses_create),
)


class OpenAiInstrumentor(ReasoningInstrumentor):
    """Captures ``reasoning_content`` / ``reasoning`` of Chat Completions and the reasoning items of the
    Responses API (sync, async, streamed, ``stream()`` and ``parse()`` helpers)."""

    provider = "openai"
    sdk = "openai"
    instruments = _instruments
    wraps = _WRAPS
    adapter = OpenAiAdapter
    version = __version__
    live_view = LiveChannel
