"""Server-Sent Events framing and the JSON bodies of the live view's events (pure functions)."""

from __future__ import annotations

import json
from typing import Any, Final

from loom_otel.live._channel import LiveCall, ReasoningDelta, TextDelta
from loom_otel.live._feed import Done, Partial, Reset

__all__ = ["KEEPALIVE", "delta_body", "done_body", "frame", "partial_body", "reset_body"]

KEEPALIVE: Final = b": keepalive\n\n"
_ENCODE: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_LINE_BREAKS: Final = {ord(c): f"\\u{ord(c):04x}" for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
"""Every character ``str.splitlines`` breaks a line at (what ``httpx``'s ``iter_lines`` splits on), as
the JSON escape of itself: JSON leaves all but ``\\n`` and ``\\r`` raw with ``ensure_ascii=False``, and they
occur only inside strings, where the escape reads back as the same character."""


def frame(event: str, data: dict[str, Any]) -> bytes:
    """One SSE event; its JSON holds no line separator of any kind, so ``data`` is a single line."""
    return f"event: {event}\ndata: {_ENCODE(data).translate(_LINE_BREAKS)}\n\n".encode()


def _call(call: LiveCall) -> dict[str, Any]:
    return {
        "execution": call.execution_id,
        "step": call.step_id,
        "provider": call.provider,
        "origin": f"llm-reasoning:{call.step_id}",
    }


def delta_body(delta: ReasoningDelta | TextDelta) -> dict[str, Any]:
    return {
        "execution": delta.execution_id,
        "step": delta.step_id,
        "provider": delta.provider,
        "origin": delta.text.origin,
        "block": delta.block_index,
        "seq": delta.seq,
        "text": delta.text.text,
    }


def partial_body(partial: Partial) -> dict[str, Any]:
    return {
        **_call(partial.call),
        "source": "live",
        "truncated": partial.truncated,
        "blocks": [{"block": block, "text": text} for block, text in partial.blocks],
    }


def reset_body(execution_id: str, reset: Reset) -> dict[str, Any]:
    return {"execution": execution_id, "step": reset.step_id}


def done_body(done: Done) -> dict[str, Any]:
    return {**_call(done.call), "outcome": done.outcome, "kept": done.kept, "attempt": done.attempt}
