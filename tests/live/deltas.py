"""Reasoning deltas for a live call, as the channel makes them."""

from __future__ import annotations

from loom_otel.core import Untrusted
from loom_otel.live import LiveCall, ReasoningDelta

__all__ = ["delta"]


def delta(call: LiveCall, text: str, seq: int = 1, block: int = 0) -> ReasoningDelta:
    origin = f"llm-reasoning:{call.step_id}"
    return ReasoningDelta(
        call.execution_id, call.step_id, call.provider, block, Untrusted(text, origin=origin), call.tenant,
        call.call_id, seq,
    )  # fmt: skip
