"""The JSON document of one execution's reading: ``loom-otel audit show --json [--text]`` prints it and
``loom-otel serve`` answers it (``GET /api/executions/{id}``), holding only what its reader may read."""

from __future__ import annotations

from loom_otel.audit._read import AttemptReading, ReasoningReading
from loom_otel.core.stores import parse_layout

__all__ = ["attempt_document", "reading_document"]


def attempt_document(attempt: AttemptReading, *, text: bool) -> dict[str, object]:
    """One attempt: its call and its parts; each part's text (with ``text``, when ``ok``) beside the
    origin that marks it untrusted model output, and the standing of its record (``signed``, ``chained``,
    ``unproven``; an erasure's, of its tombstone)."""
    parts = []
    for p in attempt.parts:
        entry: dict[str, object] = {
            "index": p.index,
            "kind": p.kind.value,
            "status": p.status.value,
            "size": p.size,
            "digest": p.digest,
            "ref": p.ref,
            "standing": attempt.standing.value,
        }
        if p.erasure is not None:
            entry["erasure"] = {
                "time": p.erasure.time,
                "reason": p.erasure.reason,
                "by": p.erasure.by,
                "scope": p.erasure.scope,
                "standing": None if p.erasure.standing is None else p.erasure.standing.value,
            }
        if text and p.text is not None:
            entry["text"] = p.text.text
            entry["untrusted_origin"] = p.text.origin
        parts.append(entry)
    return {
        "attempt": attempt.attempt,
        "received": attempt.received,
        "provider": attempt.provider,
        "request_model": attempt.request_model,
        "response_model": attempt.response_model,
        "origin": attempt.origin,
        "seq": attempt.seq,
        "time": attempt.time,
        "parts": parts,
        "layout": parse_layout(attempt.layout),
    }


def reading_document(reading: ReasoningReading, *, text: bool) -> dict[str, object]:
    """``{"execution_id", "tenant", "steps": [{"step_id", "attempts": [...]}]}``."""
    steps = [
        {"step_id": step.step_id, "attempts": [attempt_document(a, text=text) for a in step.attempts]}
        for step in reading.steps
    ]
    return {"execution_id": reading.execution_id, "tenant": reading.tenant, "steps": steps}
