"""The durable record behind the live view: the captures of the calls a viewer was admitted to, read
back through ``read_reasoning_bounded`` (ADR D4: selection before any store read; 256 parts / 1 MiB
per response). A call's capture is named by its attempt and part refs (``CaptureKey``), so another
principal's attempt of a step with the same name is never selected, let alone read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loom_otel.audit import CaptureKey, PartReading, ReasoningLimits, ReasoningQuery, read_reasoning_bounded
from loom_otel.audit._captures import ReasoningSource
from loom_otel.core.stores import ReasoningStore
from loom_otel.live._feed import Done

__all__ = ["part_json", "read_calls"]


def part_json(part: PartReading, *, received: bool) -> dict[str, Any]:
    """One part as the transport sends it: text only when ``ok``, marked with its untrusted origin.
    ``received``: the part is of its lane's newest call among those read (not another reader's)."""
    body: dict[str, Any] = {
        "step": part.step_id,
        "attempt": part.attempt,
        "received": received,
        "index": part.index,
        "kind": str(part.kind.value),
        "status": str(part.status),
        "size": part.size,
    }
    if part.text is not None:
        body["text"] = part.text.text
        body["origin"] = part.text.origin
    return body


def read_calls(
    source: ReasoningSource,
    store: ReasoningStore,
    *,
    execution_id: str,
    tenant: str | None,
    calls: Sequence[Done],
    limits: ReasoningLimits | None = None,
) -> tuple[list[dict[str, Any]], bool]:
    """The parts of the captures of ``calls`` (ended calls the viewer was admitted to) and no other, one
    bounded read per step sharing one budget, as JSON; ``truncated`` when a cap left parts unread.
    Calls that kept no text are not read. Blocking I/O: run it in a thread."""
    limits = limits or ReasoningLimits()
    steps: dict[str, set[CaptureKey]] = {}
    newest: dict[tuple[str, str | None, str | None], Done] = {}
    for done in calls:
        call = done.call
        if done.kept and done.attempt is not None:
            steps.setdefault(call.step_id, set()).add(CaptureKey(done.attempt, done.refs))
        lane = (call.step_id, call.principal, call.owner)
        if lane not in newest or newest[lane].call.call_id < call.call_id:
            newest[lane] = done
    received = {(d.call.step_id, d.attempt) for d in newest.values()}
    parts: list[dict[str, Any]] = []
    used = 0
    for step_id, keys in steps.items():
        remaining = ReasoningLimits(max_parts=limits.max_parts - len(parts), max_bytes=limits.max_bytes - used)
        query = ReasoningQuery(execution_id=execution_id, tenant=tenant, step_id=step_id, captures=frozenset(keys))
        reading = read_reasoning_bounded(source, store, query, remaining)
        parts.extend(part_json(p, received=(p.step_id, p.attempt) in received) for p in reading.parts)
        used += reading.bytes_read
        if reading.truncated:
            return parts, True
    return parts, False
