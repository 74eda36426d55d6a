"""OpenAI thinking settings: a Responses request that asks for reasoning without its summary (DESIGN
"Readable by request"), the settings a span records, and the summaries withheld from the application.

A Responses request with ``reasoning`` but no ``summary`` reasons and returns reasoning items with an
empty ``summary`` and their ``encrypted_content``. With ``LOOM_OTEL_REQUEST_READABLE=summarized``
loom-otel sends ``summary: "auto"``, keeps the summaries, and hands the application the items without
them (and the response's ``reasoning`` as the application set it). The vendor does not need them back:
``encrypted_content`` carries the reasoning forward, and a later request sends the items as the
application holds them, as a bare run would. Chat Completions has no such setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from loom_otel.core.vendor_helpers import AttributeValue, attr, field

__all__ = ["readable_reasoning", "thinking_settings", "withhold_item", "withhold_summaries"]

_ASKED: Final = "auto"
"""The summary loom-otel asks for: the most detailed one the model offers."""


def readable_reasoning(kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``reasoning`` to send instead of the application's when it asks for reasoning without a
    summary; ``None``: send it as it is."""
    reasoning = kwargs.get("reasoning")
    if not isinstance(reasoning, Mapping) or reasoning.get("summary") or reasoning.get("generate_summary"):
        return None
    return {**reasoning, "summary": _ASKED}


def thinking_settings(kwargs: Mapping[str, Any], *, chat: bool, readable: bool) -> dict[str, AttributeValue]:
    """``loom.request.thinking.*`` as the application sent them: the effort (Chat ``reasoning_effort``,
    Responses ``reasoning.effort``) and the Responses summary as the display."""
    out: dict[str, AttributeValue] = {}
    reasoning = None if chat else kwargs.get("reasoning")
    effort = kwargs.get("reasoning_effort") if chat else field(reasoning, "effort") if reasoning else None
    summary = field(reasoning, "summary") if reasoning else None
    if isinstance(effort, str):
        out[attr.REQUEST_THINKING_EFFORT] = effort
    if isinstance(summary, str):
        out[attr.REQUEST_THINKING_DISPLAY] = summary
    if readable:
        out[attr.REQUEST_READABLE] = "summarized"
    return out


def withhold_item(item: Any) -> None:
    """A reasoning item as a request without a summary gets it: no summary."""
    if getattr(item, "type", None) == "reasoning" and getattr(item, "summary", None):
        item.summary = []


def withhold_summaries(response: Any, summary: object) -> None:
    """A response (or the one an event carries) as the bare request gets it: its reasoning items
    without their summaries, and its ``reasoning.summary`` the application's own (``summary``)."""
    if response is None:
        return
    for item in getattr(response, "output", None) or ():
        withhold_item(item)
    reasoning = getattr(response, "reasoning", None)
    if reasoning is not None and getattr(reasoning, "summary", None) is not None:
        reasoning.summary = summary
