"""Gemini thinking settings: a request that asks for thinking without its thoughts (DESIGN "Readable by
request"), the settings a span records, and the thought parts withheld from the application.

A ``thinking_config`` without ``include_thoughts`` thinks but returns no thought parts (the vendor's documentation):
with ``LOOM_OTEL_REQUEST_READABLE=summarized`` loom-otel sends ``include_thoughts: true``, keeps the
thought summaries, and takes them out of what the application gets (the response, its chunks, the
automatic-function-calling history). Gemini does not need them back (it checks only signatures); the
continuation pass puts them back all the same where the binding records expect them
(``GeminiContinuation.missing_thoughts``), so every later block still binds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loom_otel.core.vendor_helpers import AttributeValue, attr, is_mapping
from loom_otel.instrumentation.google_genai._transcript import config_value

__all__ = ["readable_config", "thinking_settings", "withhold_thoughts"]


def _thinking(config: Any) -> Any:
    return config_value(config, "thinking_config") if config is not None else None


def readable_config(config: Any) -> Any | None:
    """The config to send instead of ``config`` when it asks for thinking without its thoughts (a
    ``thinking_config`` with ``include_thoughts`` unset or false, and a budget that is not 0: thinking
    off); ``None``: send it as it is. Dicts and SDK objects alike; the application's are never written."""
    thinking = _thinking(config)
    if thinking is None or config_value(thinking, "include_thoughts") or config_value(thinking, "thinking_budget") == 0:
        return None
    if is_mapping(thinking):
        keys = [k for k in ("include_thoughts", "includeThoughts") if k in thinking]
        asked = {**{k: v for k, v in thinking.items() if k not in keys}, "include_thoughts": True}
    else:
        asked = thinking.model_copy(update={"include_thoughts": True})
    if is_mapping(config):
        keys = [k for k in ("thinking_config", "thinkingConfig") if k in config]
        return {**{k: v for k, v in config.items() if k not in keys}, "thinking_config": asked}
    return config.model_copy(update={"thinking_config": asked})


def thinking_settings(config: Any, *, readable: bool) -> dict[str, AttributeValue]:
    """``loom.request.thinking.*`` of a request's config as the application sent it (budget, level as
    the effort, include_thoughts); ``loom.request.readable`` where loom-otel asked for the thoughts."""
    out: dict[str, AttributeValue] = {}
    thinking = _thinking(config)
    if thinking is not None:
        budget = config_value(thinking, "thinking_budget")
        level = config_value(thinking, "thinking_level")
        include = config_value(thinking, "include_thoughts")
        if isinstance(budget, int) and not isinstance(budget, bool):
            out[attr.REQUEST_THINKING_BUDGET] = budget
        if level is not None:
            out[attr.REQUEST_THINKING_EFFORT] = str(getattr(level, "value", level)).lower()
        if isinstance(include, bool):
            out[attr.REQUEST_THINKING_INCLUDE_THOUGHTS] = include
    if readable:
        out[attr.REQUEST_READABLE] = "summarized"
    return out


def withhold_thoughts(contents: Sequence[Any]) -> bool:
    """Take the thought parts out of ``contents`` (SDK ``Content`` objects), as a request without
    ``include_thoughts`` would have had them: a signed thought part keeps its signature, without its
    text. Whether a content that had parts is left with none (a chunk the application must not get)."""
    emptied = False
    for content in contents:
        parts = getattr(content, "parts", None)
        if not parts or not any(getattr(p, "thought", False) for p in parts):
            continue
        kept = []
        for part in parts:
            if not getattr(part, "thought", False):
                kept.append(part)
            elif part.thought_signature:
                part.text, part.thought = "", None
                kept.append(part)
        content.parts = kept
        emptied = emptied or not kept
    return emptied
