"""The public names this part of loom-otel adds (httpx's exported-members pattern)."""

from __future__ import annotations

import loom_otel.audit as audit
from loom_otel.core._guard import _requests as _guard
from loom_otel.instrumentation.anthropic import _guard as anthropic_guard
from loom_otel.instrumentation.google_genai import _guard as gemini_guard
from loom_otel.instrumentation.openai import _guard as openai_guard

READBACK = {
    "AttemptReading",
    "BoundedReading",
    "CaptureKey",
    "ErasureResult",
    "PartReading",
    "PartStatus",
    "ReasoningLimits",
    "ReasoningQuery",
    "ReasoningReading",
    "StepReading",
    "erase_execution",
    "read_reasoning",
    "read_reasoning_bounded",
}


def test_audit_exports() -> None:
    assert set(audit.__all__) >= READBACK
    assert audit.__all__ == sorted(audit.__all__)
    for name in audit.__all__:
        assert getattr(audit, name) is not None


def test_guard_exports() -> None:
    """The scanner and the rule in core; each vendor's field tables and request walk in its package."""
    assert _guard.__all__ == ["DATA_ROLES", "Path", "check", "check_rest", "model_fields", "present", "reasoning_block"]
    assert anthropic_guard.__all__ == ["check_anthropic_batch_request", "check_anthropic_request"]
    assert gemini_guard.__all__ == ["check_gemini_request"]
    assert openai_guard.__all__ == ["check_openai_chat_request", "check_openai_responses_request"]


def test_statuses() -> None:
    assert [s.value for s in audit.PartStatus] == [
        "ok",
        "redacted",
        "erased",
        "missing",
        "digest-mismatch",
        "empty",
        "not-kept",
        "stored",
    ]
