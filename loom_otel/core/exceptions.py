"""The exceptions and warnings loom-otel raises, in one small tree.

- ``LoomOtelError``: the root; catch it to catch everything loom-otel raises on purpose.
- ``ReasoningConfigError(LoomOtelError, ValueError)``: a configuration that cannot work (an invalid
  ``LOOM_OTEL_*`` value, an unusable store directory, ``transcript="redact"`` without a store, a refused
  request such as ``Untrusted`` text in an instruction position). Raised at ``instrument()`` /
  construction time or before a request is sent, never in the middle of a model call's response handling.
- ``ReasoningCaptureError(LoomOtelError)``: raised out of a model call only by the fail-closed capture
  path, when evidence that was configured to be kept (a store blob, a journal record) could not be
  written. The response is not handed to the application.
- ``ReasoningContinuationError(LoomOtelError)``: raised out of a model call, before anything is
  sent, when the reasoning store failed (raised, timed out) while readable reasoning was being put back
  into a request (``transcript="redact"``, or a stripped tool round). The caller retries; loom-otel never
  continues with less than the store would have given. A definitive "not found" is not an error: the
  block is dropped (DESIGN "Continuation").
- ``LiveSubscriberLimitError(LoomOtelError)``: ``LiveReasoningHub.subscribe`` refused a viewer it would
  admit because the hub's feeds are all taken (``max_subscribers``) or this viewer's are
  (``max_subscribers_per_viewer``); the HTTP live view answers 503 or 429.
- ``LoomOtelWarning(UserWarning)``: a configuration that works but keeps less than it could (no store,
  unsigned checkpoints).

No message of any of these ever contains reasoning text, a signature or redacted data.
"""

from __future__ import annotations

__all__ = [
    "LiveSubscriberLimitError",
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


class LiveSubscriberLimitError(LoomOtelError):
    """A live feed refused for room: ``limit`` feeds are open, in all or (``per_viewer``) this viewer's."""

    def __init__(self, limit: int, *, per_viewer: bool) -> None:
        self.limit = limit
        self.per_viewer = per_viewer
        whose = "of this viewer's" if per_viewer else "in all"
        setting = "max_subscribers_per_viewer" if per_viewer else "max_subscribers"
        super().__init__(f"the live view already serves {limit} feeds {whose} (LiveReasoningHub {setting})")


class LoomOtelWarning(UserWarning):
    """A configuration that keeps less than it could."""
