"""Anthropic thinking settings: which requests ask for thinking without readable output (DESIGN
"Readable by request"), which models summarise their thinking, and the settings a span records.

Facts from the vendor's documentation: ``thinking.display`` is ``summarized`` or ``omitted`` and
"the default depends on the model": ``omitted`` on the newest models, whose blocks then carry an empty
``thinking`` and their signature. The Claude 4 family and later return a summary of their thinking,
never the raw chain; Claude 3 models return the raw chain.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from loom_otel.core.vendor_helpers import AttributeValue, attr, field

__all__ = ["default_omitted", "readable_thinking", "summarises", "thinking_settings"]

_THINKING_ON: Final = frozenset({"enabled", "adaptive"})
_GENERATION: Final = re.compile(r"claude-(?:[a-z]+-)*?(\d{1,2})(?!\d)")
"""The model's generation: the first number after ``claude-`` (``claude-3-7-sonnet``, ``claude-sonnet-4-6``,
``anthropic.claude-opus-4-1-v1:0``, ``claude-sonnet-4-5@20250929``)."""
_NEWEST_NAMES: Final = ("claude-mythos", "claude-fable")
"""Claude models named without a generation number that belong to the newest family."""
_OMITTED_FROM: Final = 5
"""The first generation whose default ``display`` is ``omitted`` (the models the vendor lists as the
newest: opus/sonnet/haiku 5-5, fable and mythos)."""
_SUMMARISES_FROM: Final = 4


def _generation(model: object) -> int | None:
    """The Claude generation a model name says; ``None`` for a name with no number (or not Claude)."""
    if not isinstance(model, str):
        return None
    found = _GENERATION.search(model.lower())
    return int(found.group(1)) if found else None


def _newest(model: object) -> bool:
    return isinstance(model, str) and any(name in model.lower() for name in _NEWEST_NAMES)


def summarises(model: object) -> bool:
    """Whether the model returns a summary of its thinking (Claude 4 and later, and the newest names
    without a number), never the raw chain: its readable thinking is a ``summary`` part."""
    generation = _generation(model)
    return _newest(model) if generation is None else generation >= _SUMMARISES_FROM


def default_omitted(model: object) -> bool:
    """Whether a request that leaves ``display`` unset gets omitted thinking on this model."""
    generation = _generation(model)
    return _newest(model) if generation is None else generation >= _OMITTED_FROM


def readable_thinking(kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The thinking setting to send instead of the application's when it asks for thinking without
    readable output (``display: "omitted"``, or unset on a model whose default is omitted); ``None``:
    send the request as it is (no thinking, readable already, a display loom-otel does not know)."""
    thinking = kwargs.get("thinking")
    if not isinstance(thinking, Mapping) or thinking.get("type") not in _THINKING_ON:
        return None
    display = thinking.get("display")
    if display == "omitted" or (display is None and default_omitted(kwargs.get("model"))):
        return {**thinking, "display": "summarized"}
    return None


def thinking_settings(kwargs: Mapping[str, Any], *, readable: bool) -> dict[str, AttributeValue]:
    """``loom.request.thinking.*`` of a request as the application sent it (type, budget, display, and
    the effort of ``output_config``); with ``readable``, ``loom.request.readable`` says loom-otel asked
    the vendor for a readable summary."""
    out: dict[str, AttributeValue] = {}
    thinking = kwargs.get("thinking")
    if thinking is not None:
        kind, budget, display = field(thinking, "type"), field(thinking, "budget_tokens"), field(thinking, "display")
        if isinstance(kind, str):
            out[attr.REQUEST_THINKING_TYPE] = kind
        if isinstance(budget, int) and not isinstance(budget, bool):
            out[attr.REQUEST_THINKING_BUDGET] = budget
        if isinstance(display, str):
            out[attr.REQUEST_THINKING_DISPLAY] = display
    config = kwargs.get("output_config")
    effort = field(config, "effort") if config is not None else None
    if isinstance(effort, str):
        out[attr.REQUEST_THINKING_EFFORT] = effort
    if readable:
        out[attr.REQUEST_READABLE] = "summarized"
    return out
