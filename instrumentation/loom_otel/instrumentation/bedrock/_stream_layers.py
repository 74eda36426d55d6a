"""The layer of a ConverseStream between botocore and the application, beside the extractors that read
it: in redact mode ``Blanking`` hands the application each event without its reasoning text once capture
saw it, the first delta of each block carrying ``WITHHELD``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from loom_otel.core.vendor import AccumulatorLayer
from loom_otel.core.vendor_helpers import WITHHELD
from loom_otel.instrumentation.bedrock._extractors import ConverseStreamAccumulator

__all__ = ["Blanking"]


def _redacting(feed: Callable[[Any], Sequence[tuple[int, str]]]) -> Callable[[Any], Sequence[tuple[int, str]]]:
    """Redact mode: ``feed`` (capture's), then the event's reasoning text blanked AFTER capture saw it; the
    first text delta of a block carries ``WITHHELD`` instead (what ``scrub`` hands a complete answer)."""
    marked: set[object] = set()

    def redacting_feed(event: Any) -> Sequence[tuple[int, str]]:
        deltas = feed(event)
        found = event.get("contentBlockDelta") if isinstance(event, dict) else None
        delta = found.get("delta") if isinstance(found, dict) else None
        reasoning = delta.get("reasoningContent") if isinstance(delta, dict) else None
        if isinstance(reasoning, dict) and reasoning.get("text"):
            index = found.get("contentBlockIndex") if isinstance(found, dict) else None
            reasoning["text"] = "" if index in marked else WITHHELD
            marked.add(index)
        return deltas

    return redacting_feed


class Blanking(AccumulatorLayer):
    """A stream whose application gets reasoning without text. Holds nothing of the call."""

    def __init__(self, events: ConverseStreamAccumulator) -> None:
        super().__init__(events)
        self.events = events
        self.feed: Callable[[Any], Sequence[tuple[int, str]]] = _redacting(events.feed)
