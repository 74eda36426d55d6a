"""Under zero code (``opentelemetry-instrument``) an invalid configuration fails the model calls, not the start.

``opentelemetry-instrument`` catches an instrumentor's (or an exporter's) exception, logs it with two
tracebacks and runs the application without loom-otel: a typo in ``LOOM_OTEL_REASONING_TRANSCRIPT``
would hand the application readable reasoning and keep nothing (DESIGN "Failure policy"). So when
``instrument()`` (or the chained exporter's construction) runs under the auto-instrumentation loader
(``under_zero_code``), the ``ReasoningConfigError`` is not raised: it is told in one line at start-up
(``refuse``, once per process) and the instrumentors wrap their SDK all the same with wrappers whose
every call raises it (``refusal``: the error an instrumentor refuses with, also when the exporter found
it). ``instrument()`` called by code raises as ever.
"""

from __future__ import annotations

import logging
import sys
import threading
from types import FrameType
from typing import Final

from loom_otel.core.exceptions import ReasoningConfigError

__all__ = ["forget_refusal", "refusal", "refuse", "refused_call", "under_zero_code"]

_logger = logging.getLogger(__name__)

LOADER: Final = "opentelemetry.instrumentation.auto_instrumentation"
"""The package whose loader (``_load_instrumentors``, ``_load_configurators``) runs at start-up under
``opentelemetry-instrument``, and catches what an instrumentor or an exporter raises."""

_lock = threading.Lock()
_refused: ReasoningConfigError | None = None
"""The first configuration error found under zero code in this process."""


def under_zero_code() -> bool:
    """Whether the caller runs inside the auto-instrumentation loader (``opentelemetry-instrument``'s
    ``sitecustomize``), which would catch an exception and run the application without loom-otel."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__")
        if isinstance(name, str) and (name == LOADER or name.startswith(LOADER + ".")):
            return True
        frame = frame.f_back
    return False


def refuse(error: ReasoningConfigError) -> None:
    """Remember ``error`` as this process's refusal and tell it in one line (the first one only)."""
    global _refused
    with _lock:
        first, _refused = _refused is None, _refused or error
    if first:
        _logger.error("loom-otel: %s; every model call raises ReasoningConfigError until it is fixed", _one_line(error))


def refusal() -> ReasoningConfigError | None:
    """The configuration error found under zero code so far (by an instrumentor or the exporter)."""
    with _lock:
        return _refused


def refused_call(error: ReasoningConfigError) -> ReasoningConfigError:
    """A fresh error for one refused model call: one line naming the variable, the value and what is
    allowed (a fresh instance, so that tracebacks do not pile up on one object)."""
    return ReasoningConfigError(f"{_one_line(error)} (loom-otel refuses model calls until it is fixed)")


def forget_refusal() -> None:
    """Forget the process's refusal (tests)."""
    global _refused
    with _lock:
        _refused = None


def _one_line(error: ReasoningConfigError) -> str:
    return " ".join(str(error).splitlines())
