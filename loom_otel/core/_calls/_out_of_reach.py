"""Telemetry a framework sends outside OpenTelemetry, which loom-otel can neither reach nor scrub: said
once, at ``instrument()``, naming the framework and how its user turns it off.

The OpenAI Agents SDK exports its own traces to OpenAI with its own trace processors (not spans of an
OpenTelemetry tracer provider): their spans carry the agents' tool arguments and results and, for a model
other than the Responses API's, the messages sent. Its environment switch is read here as the SDK reads
it; an application that calls ``set_tracing_disabled(True)`` is warned all the same (the call comes
after ``instrument()`` under ``opentelemetry-instrument``).
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from typing import Final

from loom_otel.core._runtime._warnings import warn

__all__ = ["warn_of_exports_out_of_reach"]

_AGENTS_DISTRIBUTION: Final = "openai-agents"
_AGENTS_DISABLED: Final = "OPENAI_AGENTS_DISABLE_TRACING"
"""The Agents SDK's own switch (``true`` or ``1`` turns its trace export off)."""


def warn_of_exports_out_of_reach() -> None:
    """One warning per process for each installed framework whose own trace export is on."""
    try:
        installed = version(_AGENTS_DISTRIBUTION)
    except PackageNotFoundError:
        return
    if os.environ.get(_AGENTS_DISABLED, "false").lower() in ("true", "1"):
        return
    warn(
        f"the OpenAI Agents SDK ({_AGENTS_DISTRIBUTION} {installed}) exports its own traces to OpenAI, "
        "outside OpenTelemetry: loom-otel cannot reach or scrub them (tool arguments and results, and a "
        f"Chat Completions model's messages); set {_AGENTS_DISABLED}=true (or call "
        "agents.set_tracing_disabled(True)) where they must not leave",
        once=("exports-out-of-reach", _AGENTS_DISTRIBUTION),
    )
