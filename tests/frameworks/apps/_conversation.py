"""What every framework app does, read from its environment (the apps never import loom_otel, but for
the one line of a variant ``execution``).

FW_VENDOR ``anthropic`` | ``gemini`` | ``openai``; FW_VARIANT ``tools`` (one fixed system prompt), ``streamed``
(the same, where a framework has a streamed run as well, through it), ``system-turn``
(the system prompt changes at each user turn), ``system-call`` (it changes at every model call, inside
tool rounds too), ``execution`` (the conversation inside ``loom_otel.core.execution()``); FW_DROP ``1``: the Anthropic request opts into the vendor's server-side handling of
stale blocks (``thinking.block_binding`` with ``drop_block``). Each app runs one conversation: a
question answered after three tool rounds, then a follow-up in the same conversation, and prints one
JSON line ``{"answers": [...]}`` (or ``{"error": ...}`` and exits 1).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

QUESTIONS = ("Plan a day in Lisbon for me.", "And what should I pack for it?")
ANTHROPIC_MODEL = "claude-sonnet-5-5"
GEMINI_MODEL = "gemini-3-flash-preview"
OPENAI_MODEL = "gpt-5.5"
BINDING_BETA = "thinking-binding-controls-2026-08-01"

VENDOR = os.environ.get("FW_VENDOR", "anthropic")
VARIANT = os.environ.get("FW_VARIANT", "tools")
DROP = os.environ.get("FW_DROP") == "1"
BASE_URL = os.environ["FW_BASE_URL"]

_calls = [0]


def anthropic_thinking() -> dict[str, object]:
    thinking: dict[str, object] = {"type": "adaptive"}
    if DROP:
        thinking["block_binding"] = {"prefix_mismatch_behavior": "drop_block"}
    return thinking


def system_prompt(turn: int) -> str:
    """The system prompt of a model call in ``turn`` (1-based), as the variant says."""
    base = "You are a careful travel assistant. Use the tools before answering."
    if VARIANT == "system-turn":
        return f"{base} This is turn {turn} of the conversation."
    if VARIANT == "system-call":
        _calls[0] += 1
        return f"{base} This is model call {_calls[0]}."
    return base


def get_weather(city: str) -> str:
    """The weather forecast for a city."""
    return f"Sunny and 24C in {city}."


def run(turn: Callable[[int, str], str], held: Callable[[], object] | None = None) -> None:
    """``turn(n, question)`` answers one user message of the conversation (the app keeps the history);
    ``held()``, where given, is the history the app holds at the end (printed as ``"held"``: in redact
    mode it must hold no reasoning text)."""
    answers = []
    try:
        for number, question in enumerate(QUESTIONS, start=1):
            answers.append(turn(number, question))
    except Exception as error:  # the matrix compares failures too
        print(json.dumps({"answers": answers, "error": f"{type(error).__name__}: {error}"[:2000]}))
        sys.exit(1)
    result: dict[str, object] = {"answers": answers}
    if held is not None:
        result["held"] = json.dumps(held(), default=repr)
    print(json.dumps(result))
