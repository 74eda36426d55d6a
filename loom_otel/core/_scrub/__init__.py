"""Reasoning scrubbing of everyone's telemetry (DESIGN "Telemetry citizenship").

Other instrumentations (the anthropic SDK's content mode, OpenInference, OpenLLMetry, pydantic-ai,
google-adk) put reasoning text and signatures on their spans, span events and log records. With
loom-otel installed these are replaced, before any exporter sees them, by the reference and digest
loom-otel captured, or by a removal marker where it captured none:

- ``_registry``: what this process captured, in bounded memory, across traces;
- ``_windows``: the fast search for pieces of it (fixed-length windows of a skeleton that the common
  encodings leave alone), which finds a prefix, a stream delta, or an encoded copy;
- ``_shapes``: reasoning shapes in JSON values, cut short or not, captured or not;
- ``_values`` and ``_records``: every string a span or log record carries, through the rules above;
- ``_install``: the SDK's span and log pipelines, every provider of the process, scrubbing first.
"""

from __future__ import annotations

from loom_otel.core._scrub import _deferred, _registry
from loom_otel.core._scrub._install import (
    ReasoningLogScrubber,
    ReasoningScrubber,
    install_scrubber,
    leave_alone,
    uninstall_scrubber,
)
from loom_otel.core._scrub._registry import REMOVED, marker, reference_of, remember, sight
from loom_otel.core._scrub._values import scrub_attributes, scrub_texts, scrub_value

__all__ = [
    "REMOVED",
    "ReasoningLogScrubber",
    "ReasoningScrubber",
    "forget_all",
    "install_scrubber",
    "leave_alone",
    "uninstall_scrubber",
    "marker",
    "reference_of",
    "remember",
    "scrub_attributes",
    "scrub_texts",
    "scrub_value",
    "sight",
]


def forget_all() -> None:
    """Forget every remembered text and signature, and every span waiting for its batch (tests)."""
    _registry.forget_all()
    _deferred.forget()
