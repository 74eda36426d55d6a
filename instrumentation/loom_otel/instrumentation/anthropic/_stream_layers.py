"""The layers of an Anthropic event stream between the SDK and the application, beside the extractors
that read it: ``Blanking`` hands the application each event without its thinking text once capture saw it
(redact mode, or a summary only loom-otel asked for); ``Snapshot`` reads the ``messages.stream()``
helper's own final message instead of taking every event apart a second time.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, Final

from loom_otel.core import Reasoning
from loom_otel.core.exceptions import ReasoningCaptureError
from loom_otel.core.vendor import AccumulatorLayer, RequestInfo, ResponseInfo
from loom_otel.core.vendor_helpers import WITHHELD
from loom_otel.instrumentation.anthropic._extractors import MessageStreamAccumulator, reasonings_of, response_info

__all__ = ["EVENTS", "STREAMED", "Blanking", "Snapshot"]


def _redacting(
    feed: Callable[[Any], Sequence[tuple[int, str]]], *, withholds: bool
) -> Callable[[Any], Sequence[tuple[int, str]]]:
    """Redact mode: ``feed`` (capture's), then each event's thinking text blanked AFTER capture saw it; the
    first delta of a block that had text carries ``WITHHELD`` instead (what ``scrub`` hands a complete
    message), unless the text is a summary only loom-otel asked for (``withholds``: empty, as asked)."""
    marked: set[int] = set()

    def redacting_feed(chunk: Any) -> Sequence[tuple[int, str]]:
        deltas = feed(chunk)
        kind = chunk.type
        if kind == "content_block_delta" and chunk.delta.type == "thinking_delta":
            had = bool(chunk.delta.thinking)
            chunk.delta.thinking = ""
            if had and not withholds and chunk.index not in marked:
                marked.add(chunk.index)
                chunk.delta.thinking = WITHHELD
        elif kind == "content_block_start" and getattr(chunk.content_block, "type", None) == "thinking":
            if chunk.content_block.thinking and not withholds and chunk.index not in marked:
                marked.add(chunk.index)
                chunk.content_block.thinking = WITHHELD
            else:
                chunk.content_block.thinking = ""
        return deltas

    return redacting_feed


def _thinking_delta(event: Any) -> bool:
    return bool(event.type == "content_block_delta" and event.delta.type == "thinking_delta")


class Blanking(AccumulatorLayer):
    """An event stream whose application gets thinking without text: each event's thinking text is
    blanked AFTER capture (the accumulator underneath, ``events``) saw it. Holds nothing of the call."""

    def __init__(self, events: MessageStreamAccumulator, *, withholds: bool) -> None:
        super().__init__(events)
        self.events = events
        # (Neither feed refers to this layer: a bound method kept on it would be a reference cycle.)
        self.feed: Callable[[Any], Sequence[tuple[int, str]]] = _redacting(events.feed, withholds=withholds)
        self.withheld: Callable[[Any], bool] | None = _thinking_delta if withholds else None
        """A summary only loom-otel asked for: its thinking deltas are not handed on (an omitted block
        streams none); capture saw them first."""

    @property
    def message(self) -> Any:
        return self.events.message


class Snapshot:
    """``messages.stream()`` keeps the message it streams (``current_message_snapshot``): with no live
    view and no redaction, capture reads it once when the stream ends, as for a complete response,
    instead of taking every event apart a second time; the finish's steps read it as a whole message.

    The stream is held weakly: it holds this accumulator (through the proxy of its raw stream), and a
    strong reference would make a cycle that only the garbage collector frees, keeping the stream, the
    proxy, the call and the whole response (some 70 objects) alive until a collection. ``result`` runs
    from the stream's own iteration or ``close()``, while the stream is alive."""

    text_deltas: list[tuple[int, str]] | None = None
    reads_whole_response = True

    def __init__(self, stream: Any, request: RequestInfo) -> None:
        self._stream = _weakly(stream)
        self._request = request
        self.message: Any = None
        """The final message, once ``result`` read it (``None``: closed before ``message_start``)."""

    def feed(self, event: Any) -> Sequence[tuple[int, str]]:
        return ()

    def result(self) -> tuple[list[Reasoning], ResponseInfo]:
        stream = self._stream()
        if stream is None:  # only a raw stream taken out of its helper stream and read after that was freed
            raise ReasoningCaptureError("the messages.stream() stream was freed before its end: capture fails closed")
        try:
            message = self.message = stream.current_message_snapshot
        except AssertionError:  # closed before message_start: nothing arrived
            return [], ResponseInfo()
        return reasonings_of(message, self._request), response_info(message, self._request)


def _weakly(stream: Any) -> Callable[[], Any]:
    """A weak reference to ``stream``; a strong one for a stream type without weak references."""
    try:
        return weakref.ref(stream)
    except TypeError:
        return lambda: stream


EVENTS: Final = (MessageStreamAccumulator, Blanking)
"""What a stream read event by event hands the finish's steps at its end (its blocks, in order)."""
STREAMED: Final = (*EVENTS, Snapshot)
"""What any stream's end hands them, each with its ``message`` (one ``isinstance`` tells a whole message
from them); the helper's snapshot is read as a whole message."""
