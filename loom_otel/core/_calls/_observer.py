"""What a model call tells whoever watches it (the live view, ``loom_otel.live``), with no import of it.

A watcher is plugged in from outside core: each vendor instrumentor names the live view's factory
(``ReasoningInstrumentor.live_view``), which the instrumentor calls with the runtime when live is on;
what it returns (``_handler.ObserverFactory``) starts each watched call's ``CallObserver``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from loom_otel.core._calls._capture import Capture

__all__ = ["CallObserver"]


class CallObserver(Protocol):
    """What one model call tells its watcher, on the call's thread; no method raises into the call.

    Started (by the handler's ``observe``) when the call first has something to tell: a stream's start, a delta,
    or its end with a capture. ``text``: the watcher also takes the answer's streamed text deltas.
    """

    @property
    def text(self) -> bool: ...

    def reasoning_delta(self, deltas: Sequence[tuple[int, str]], /) -> None:
        """Streamed reasoning deltas (block index, text)."""
        ...

    def text_delta(self, deltas: Sequence[tuple[int, str]], /) -> None:
        """Streamed answer text deltas (block index, text), when ``text``."""
        ...

    def ended(self, outcome: str, captured: Capture | None, /) -> None:
        """The call ended (``completed``, ``failed``, or why a stream stopped), with what it captured."""
        ...
