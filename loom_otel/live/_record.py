"""The durable record behind the live view: captured reasoning read back through
``read_reasoning_bounded`` (ADR D4: selection before any store read; 256 parts / 1 MiB per response)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loom_otel.audit import PartReading, ReasoningLimits, ReasoningQuery, read_reasoning_bounded
from loom_otel.audit._records import ReasoningSource
from loom_otel.core._store import ReasoningStore

__all__ = ["part_json", "read_steps"]


def part_json(part: PartReading) -> dict[str, Any]:
    """One part as the transport sends it: text only when ``ok``, marked with its untrusted origin."""
    body: dict[str, Any] = {
        "step": part.step_id,
        "attempt": part.attempt,
        "received": part.received,
        "index": part.index,
        "kind": str(part.kind.value),
        "status": str(part.status),
        "size": part.size,
    }
    if part.text is not None:
        body["text"] = part.text.text
        body["origin"] = part.text.origin
    return body


def read_steps(
    source: ReasoningSource,
    store: ReasoningStore,
    *,
    execution_id: str,
    tenant: str | None,
    steps: Sequence[str],
    limits: ReasoningLimits | None = None,
    received_only: bool = False,
) -> tuple[list[PartReading], bool]:
    """Parts of ``steps`` (only those: the audience was decided per step), one bounded read per step
    sharing one budget; ``truncated`` when a cap left parts unread. Blocking I/O: run it in a thread."""
    limits = limits or ReasoningLimits()
    parts: list[PartReading] = []
    used = 0
    for step_id in steps:
        remaining = ReasoningLimits(max_parts=limits.max_parts - len(parts), max_bytes=limits.max_bytes - used)
        query = ReasoningQuery(execution_id=execution_id, tenant=tenant, step_id=step_id)
        reading = read_reasoning_bounded(source, store, query, remaining)
        parts.extend(p for p in reading.parts if p.received or not received_only)
        used += reading.bytes_read
        if reading.truncated:
            return parts, True
    return parts, False
