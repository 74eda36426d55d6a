"""The exceptions and warnings loom-otel raises, in one small tree.

- ``LoomOtelError``: the root; catch it to catch everything loom-otel raises on purpose.
- ``ReasoningConfigError(LoomOtelError, ValueError)``: a configuration that cannot work (an unusable
  store directory, ``transcript="redact"`` without a store, a refused request such as ``Untrusted``
  text in an instruction position). Raised at ``instrument()`` / construction time or before a request
  is sent, never in the middle of a model call's response handling.
- ``ReasoningCaptureError(LoomOtelError)``: raised out of a model call only by the fail-closed capture
  path, when evidence that was configured to be kept (a store blob, a journal record) could not be
  written. The response is not handed to the application.
- ``ReasoningContinuationError(LoomOtelError)``: raised out of a model call, before anything is
  sent, when the reasoning store failed (raised, timed out) while readable reasoning was being put back
  into a request (``transcript="redact"``, or a stripped tool round). The caller retries; loom-otel never
  continues with less than the store would have given. A definitive "not found" is not an error: the
  block is dropped (DESIGN "Continuation").
- ``LoomOtelWarning(UserWarning)``: a configuration that works but keeps less than it could (no store,
  a malformed ``LOOM_OTEL_*`` value that fell back to its default).

No message of any of these ever contains reasoning text, a signature or redacted data.
"""

from __future__ import annotations

__all__ = [
    "LoomOtelError",
    "LoomOtelWarning",
    "ReasoningCaptureError",
    "ReasoningConfigError",
    "ReasoningContinuationError",
]


class LoomOtelError(Exception):
    """Root of every exception loom-otel raises on purpose."""


class ReasoningConfigError(LoomOtelError, ValueError):
    """A configuration or a request that loom-otel refuses."""


class ReasoningCaptureError(LoomOtelError):
    """Evidence configured to be kept could not be written; the model call fails closed."""


class ReasoningContinuationError(LoomOtelError):
    """The store failed while reasoning was being put back into a request; nothing was sent."""


class LoomOtelWarning(UserWarning):
    """A configuration that keeps less than it could."""
