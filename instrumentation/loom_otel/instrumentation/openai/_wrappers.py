"""The wrapt wrappers, one factory per wrapped method; sync and async twins differ only by ``await``.

``create`` (stream or not) and ``parse`` of Chat Completions and of the Responses API run the core's
call skeleton with the OpenAI adapter; the ``stream()`` helpers call ``create(stream=True)`` when
entered, so they are seen through it once (no double count), and ``parse()`` posts on its own (no
``create`` inside).
"""

from __future__ import annotations

from loom_otel.core.vendor import ReasoningHandler, Wrapper, async_method, sync_method

__all__ = [
    "async_chat_completions_create",
    "async_responses_create",
    "chat_completions_create",
    "responses_create",
]


def chat_completions_create(handler: ReasoningHandler) -> Wrapper:
    """``Completions.create`` and ``Completions.parse``."""
    return sync_method(handler)


def async_chat_completions_create(handler: ReasoningHandler) -> Wrapper:
    return async_method(handler)


def responses_create(handler: ReasoningHandler) -> Wrapper:
    """``Responses.create`` and ``Responses.parse``."""
    return sync_method(handler)


def async_responses_create(handler: ReasoningHandler) -> Wrapper:
    return async_method(handler)
