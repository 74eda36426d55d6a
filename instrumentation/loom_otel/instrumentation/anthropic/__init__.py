"""OpenTelemetry instrumentation for the Anthropic SDK that keeps model reasoning as audit evidence.

Usage::

    from loom_otel.core import ReasoningConfig
    from loom_otel.instrumentation.anthropic import AnthropicInstrumentor

    AnthropicInstrumentor().instrument(config=ReasoningConfig(store="file:///var/lib/app/reasoning"))

Without ``config`` everything comes from the ``LOOM_OTEL_*`` environment (``opentelemetry-instrument``).
"""

from __future__ import annotations

from typing import Final

from loom_otel.core.vendor import ReasoningInstrumentor, Wrap
from loom_otel.instrumentation.anthropic._adapter import AnthropicAdapter
from loom_otel.instrumentation.anthropic._wrappers import (
    async_messages_create,
    async_messages_stream,
    batches_create,
    messages_create,
    messages_stream,
    sdk_call_span,
)
from loom_otel.instrumentation.anthropic.package import _instruments
from loom_otel.instrumentation.anthropic.version import __version__
from loom_otel.live import LiveChannel

__all__ = ["AnthropicInstrumentor"]

_FIRST_PARTY: Final = "anthropic.resources.messages.messages"
_BETA: Final = "anthropic.resources.beta.messages.messages"
# ``import anthropic`` copies these beta functions onto the Vertex and Bedrock classes.
_VERTEX_BETA: Final = "anthropic.lib.vertex._beta_messages"
_BEDROCK_BETA: Final = "anthropic.lib.bedrock._beta_messages"

_SENDING: Final = (
    ("Messages", "create", messages_create),
    ("Messages", "stream", messages_stream),
    ("AsyncMessages", "create", async_messages_create),
    ("AsyncMessages", "stream", async_messages_stream),
)
# Structured output (``parse``): where the installed SDK has it (not in anthropic 0.47).
_PARSE: Final = (("Messages", "parse", messages_create), ("AsyncMessages", "parse", async_messages_create))

_WRAPS: Final[tuple[Wrap, ...]] = tuple(
    (module, f"{cls}.{method}", factory) for module in (_FIRST_PARTY, _BETA) for cls, method, factory in _SENDING
)
# What the installed SDK has of ``parse`` and of the Vertex and Bedrock beta copies (anthropic 0.47's
# have no ``stream``).
_PRESENT: Final[tuple[Wrap, ...]] = (
    *((module, f"{cls}.{method}", factory) for module in (_FIRST_PARTY, _BETA) for cls, method, factory in _PARSE),
    *(
        (module, f"{cls}.{method}", factory)
        for module in (_VERTEX_BETA, _BEDROCK_BETA)
        for cls, method, factory in (*_SENDING, *_PARSE)
    ),
)


# Message batches: the request guard only (batch results are not captured).
_BATCHES: Final[tuple[Wrap, ...]] = tuple(
    (module, f"{cls}.create", batches_create)
    for module in ("anthropic.resources.messages.batches", "anthropic.resources.beta.messages.batches")
    for cls in ("Batches", "AsyncBatches")
)

# The SDK's own span of an API call (anthropic >= 2.14): none inside a loom-otel model call.
_OPTIONAL: Final[tuple[Wrap, ...]] = (*_PRESENT, ("anthropic._base_client", "start_api_call_span", sdk_call_span))


class AnthropicInstrumentor(ReasoningInstrumentor):
    """Captures thinking and redacted_thinking blocks of every Messages call (sync, async, streamed,
    ``messages.stream()``, ``parse``, beta, Vertex and Bedrock beta copies)."""

    provider = "anthropic"
    sdk = "anthropic"
    instruments = _instruments
    wraps = (*_WRAPS, *_BATCHES)
    optional_wraps = _OPTIONAL
    adapter = AnthropicAdapter
    version = __version__
    live_view = LiveChannel
