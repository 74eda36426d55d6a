"""loom-otel core: vendor-neutral reasoning capture (model, context, configuration, store, journal).

Every vendor-neutral rule lives here once (the call skeleton, capture, the continuation rule, the request
guard's scanner). Instrumentation packages (``loom_otel.instrumentation.*``) hold each SDK's facts: its wrap
list, its shapes, its request guard's field tables, its side of the continuation rule; they import core
through one face, ``loom_otel.core.vendor``.
"""

from __future__ import annotations

from loom_otel.core._evidence._durability import force_flush
from loom_otel.core._evidence._model import Reasoning, ReasoningKind, ReasoningPart
from loom_otel.core._evidence._store._file import FileReasoningStore
from loom_otel.core._evidence._store._protocol import (
    Envelope,
    MemoryReasoningStore,
    ReasoningStore,
)
from loom_otel.core._evidence._store._uri import store_from_uri
from loom_otel.core._guard._untrusted import Untrusted
from loom_otel.core._runtime._config import ReasoningConfig, Runtime, configure
from loom_otel.core._runtime._context import ExecutionScope, execution, step
from loom_otel.core._runtime._hooks import CaptureCall, TextLookup
from loom_otel.core.exceptions import (
    LoomOtelError,
    LoomOtelWarning,
    ReasoningCaptureError,
    ReasoningConfigError,
    ReasoningContinuationError,
)

__all__ = [
    "CaptureCall",
    "Envelope",
    "ExecutionScope",
    "FileReasoningStore",
    "LoomOtelError",
    "LoomOtelWarning",
    "MemoryReasoningStore",
    "Reasoning",
    "ReasoningCaptureError",
    "ReasoningConfig",
    "ReasoningConfigError",
    "ReasoningContinuationError",
    "ReasoningKind",
    "ReasoningPart",
    "ReasoningStore",
    "Runtime",
    "TextLookup",
    "Untrusted",
    "configure",
    "execution",
    "force_flush",
    "step",
    "store_from_uri",
]
