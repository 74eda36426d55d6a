"""The application's two per-call hooks (ADR D1, D3) and what each is given, one frozen record each.

- ``ReasoningConfig(capture=predicate)``: ``predicate(CaptureCall) -> bool`` is asked once per model call
  whether to keep its readable reasoning; one that raises fails the call closed (``ReasoningCaptureError``).
- ``ReasoningConfig(resolve=resolver)``: ``resolver(TextLookup) -> bytes | None`` gives back the text
  a request puts back (the authorizing seam): the bytes, ``None`` for a definitive "not yours / not
  found" (the drop rule), or raises for an outage (``ReasoningContinuationError``: nothing is sent). The
  digest is checked after it, always.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CaptureCall", "CapturePredicate", "TextLookup", "TextResolver"]


@dataclass(frozen=True, slots=True)
class CaptureCall:
    """What is known of a model call when its capture is decided."""

    provider: str
    model: str
    tenant: str | None
    execution_id: str
    principal: str | None


@dataclass(frozen=True, slots=True)
class TextLookup:
    """A readable text a request needs back: whose it is and where it was kept (``ref``, ``digest``)."""

    tenant: str | None
    execution_id: str
    step_id: str | None
    """The step of the call whose request needs the text (``step()``; ``None`` outside one)."""
    principal: str | None
    ref: str
    digest: str


CapturePredicate = Callable[[CaptureCall], bool]
TextResolver = Callable[[TextLookup], "bytes | None"]
