"""Reading the evidence back: verify the chain, read reasoning (as ``Untrusted``), erase an execution
(with a chained tombstone), apply a retention policy."""

from __future__ import annotations

from loom_otel.audit._bounded import (
    BoundedReading,
    CaptureKey,
    ReasoningLimits,
    ReasoningQuery,
    read_reasoning_bounded,
)
from loom_otel.audit._erase import ErasureResult, erase_execution
from loom_otel.audit._read import (
    AttemptReading,
    PartReading,
    PartStatus,
    ReasoningReading,
    StepReading,
    read_reasoning,
)
from loom_otel.audit._retention import Retention, apply_retention, parse_retention, retention_from_environment
from loom_otel.audit._tombstones import Tombstone
from loom_otel.audit._verify import OriginReport, VerifyReport, verify

__all__ = [
    "AttemptReading",
    "BoundedReading",
    "CaptureKey",
    "ErasureResult",
    "OriginReport",
    "PartReading",
    "PartStatus",
    "ReasoningLimits",
    "ReasoningQuery",
    "ReasoningReading",
    "Retention",
    "StepReading",
    "Tombstone",
    "VerifyReport",
    "apply_retention",
    "erase_execution",
    "parse_retention",
    "read_reasoning",
    "read_reasoning_bounded",
    "retention_from_environment",
    "verify",
]
