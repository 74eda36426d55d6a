"""The layer of a Gemini stream between the SDK and the application, beside the extractors that read it:
``Scrubbing`` blanks each chunk's thought text (redact mode) and withholds the thoughts only loom-otel
asked for, after capture and the bindings saw the chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from loom_otel.core.vendor import AccumulatorLayer, StreamAccumulator

__all__ = ["Scrubbing", "Scrubs"]


class Scrubs(Protocol):
    """What blanks a chunk's readable thoughts in place (the call's ``GeminiSession``)."""

    def scrub(self, response: Any) -> None: ...


class Scrubbing(AccumulatorLayer):
    """Blanks each chunk's thought text (redact mode) and withholds the thoughts only loom-otel asked
    for, AFTER capture (and the bindings) saw it."""

    def __init__(self, session: Scrubs, inner: StreamAccumulator, withhold: Callable[[Any], None] | None) -> None:
        self._session = session
        self._withhold = withhold
        super().__init__(inner)

    def feed(self, chunk: Any) -> Sequence[tuple[int, str]]:
        deltas = self._inner.feed(chunk)
        self._session.scrub(chunk)
        if self._withhold is not None:
            self._withhold(chunk)
        return deltas
