"""The layer of an OpenAI stream between the SDK and the application, beside the extractors that read it:
``RedactingLayer`` keeps what the finish's steps read at the stream's end (the final response and its
reasoning texts, the chat messages) and, in redact mode or for a summary only loom-otel asked for, takes
each event's readable reasoning out after capture saw it; and the blanking of a whole response's items
and messages, which the ``Outgoing``'s ``scrub`` shares.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

from loom_otel.core.vendor import AccumulatorLayer, StreamAccumulator
from loom_otel.core.vendor_helpers import WITHHELD
from loom_otel.core.vendor_helpers import field as _get
from loom_otel.instrumentation.openai._readable import withhold_item, withhold_summaries
from loom_otel.instrumentation.openai._request_view import FIELDS, item_texts

__all__ = ["RedactedCall", "RedactingLayer", "blank_item", "snapshot_of", "withhold_fields"]

_TEXT_EVENTS: Final = frozenset({"response.reasoning_summary_text.done", "response.reasoning_text.done"})
_SUMMARY_EVENTS: Final = "response.reasoning_summary_"
_DELTA_EVENTS: Final = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})


class RedactedCall(Protocol):
    """What the layer reads of the call's ``Outgoing``: the API, and what the application must not hold."""

    @property
    def chat(self) -> bool: ...
    @property
    def blanks(self) -> bool: ...
    @property
    def readable(self) -> bool: ...
    @property
    def redact(self) -> bool: ...
    def app_summary(self) -> object: ...


def snapshot_of(response: Any) -> list[tuple[Any, list[str]]]:
    """A Responses response's output items with their reasoning texts, read before they are blanked."""
    return [(item, item_texts(item)[1]) for item in _get(response, "output") or ()]


def _blank_event_text(event: Any, kind: str | None, marked: set[object] | None = None) -> None:
    """A stream event's reasoning text (a delta, a done text, a reasoning part) is emptied in place. With
    ``marked`` (redact mode: the pieces already handed ``WITHHELD``), a piece's first text carries
    ``WITHHELD`` instead and its done text and part are ``WITHHELD``, as ``blank_item`` hands an item."""
    piece = (getattr(event, "item_id", None), getattr(event, "summary_index", getattr(event, "content_index", None)))
    if kind in _DELTA_EVENTS:
        first = marked is not None and event.delta and piece not in marked
        event.delta = WITHHELD if first else ""
        if first and marked is not None:
            marked.add(piece)
    elif kind in _TEXT_EVENTS:
        event.text = WITHHELD if marked is not None and event.text else ""
    part = getattr(event, "part", None)
    if kind is not None and "reasoning" in kind and part is not None and getattr(part, "text", None):
        done = marked is not None and kind.endswith(".done")
        added = marked is not None and not done and piece not in marked
        part.text = WITHHELD if done or added else ""
        if added and marked is not None:
            marked.add(piece)


def withhold_fields(obj: Any, *, first: bool) -> bool:
    """A chat message's (or delta's) reasoning out of the application's hands: ``WITHHELD`` where it had
    text and ``first`` (a message, a stream's first reasoning delta of a choice), else taken out.
    Whether it had text."""
    extra = getattr(obj, "model_extra", None)
    had = False
    if extra:
        for field in FIELDS:
            value = extra.pop(field, None)
            if isinstance(value, str) and value:
                had = True
                if first:
                    extra[field] = WITHHELD
    return had


def blank_item(item: Any) -> None:
    """Redact mode: each readable piece of a reasoning item is ``WITHHELD`` (a framework drops a reasoning
    item or summary whose text is empty); on the way out the rule puts the stored texts back."""
    if _get(item, "type") != "reasoning":
        return
    for piece in (*(_get(item, "summary") or ()), *(_get(item, "content") or ())):
        if getattr(piece, "text", None):
            piece.text = WITHHELD


def _summary_events() -> Callable[[Any], bool]:
    """Whether a Responses event belongs to a summary (withheld); the later events'
    ``sequence_number`` close the gap, as the bare stream numbers them."""
    withheld = 0

    def summary_event(event: Any) -> bool:
        nonlocal withheld
        if str(getattr(event, "type", "")).startswith(_SUMMARY_EVENTS):
            withheld += 1
            return True
        if withheld and isinstance(getattr(event, "sequence_number", None), int):
            event.sequence_number -= withheld
        return False

    return summary_event


class RedactingLayer(AccumulatorLayer):
    """A stream's accumulator, plus what the finish's steps read at its end (the final response and its
    reasoning texts, the chat messages) and, in redact mode, blanking AFTER capture saw each event."""

    def __init__(self, outgoing: RedactedCall, inner: StreamAccumulator) -> None:
        self._outgoing = outgoing
        super().__init__(inner)
        self.final: Any = None
        """The final response (``response.completed``, ``.incomplete`` or ``.failed``)."""
        self.snapshot: list[tuple[Any, list[str]]] = []
        """Its output items and their reasoning texts, read before they were blanked."""
        self._messages: dict[int, dict[str, Any]] = {}
        self._marked: set[object] = set()
        """Redact mode: the reasoning pieces (item, index) or chat choices whose first text was handed
        as ``WITHHELD``."""
        self.withheld: Callable[[Any], bool] | None = _summary_events() if outgoing.readable else None
        """A summary only loom-otel asked for: its events are not handed on (a bare request streams
        none); capture saw them first. (A closure, not a bound method: no reference cycle.)"""

    def feed(self, chunk: Any) -> Sequence[tuple[int, str]]:
        keeps = not self._outgoing.chat and (hasattr(chunk, "response") or hasattr(chunk, "item"))
        if keeps and self._outgoing.blanks:
            # The inner accumulator keeps the event's response or item, which is blanked below.
            deltas = self._inner.feed(chunk.model_copy(deep=True))
        else:
            deltas = self._inner.feed(chunk)
        if self._outgoing.chat:
            self._chat_chunk(chunk)
        else:
            self._event(chunk)
        return deltas

    def _chat_chunk(self, chunk: Any) -> None:
        for choice in _get(chunk, "choices") or ():
            message = self._messages.setdefault(choice.index, {"content": "", "calls": {}, "reasoning": {}})
            delta = choice.delta
            message["content"] += delta.content or ""
            extra = getattr(delta, "model_extra", None) or {}
            for field in FIELDS:
                if isinstance(extra.get(field), str):
                    message["reasoning"][field] = message["reasoning"].get(field, "") + extra[field]
            for call in delta.tool_calls or ():
                slot = message["calls"].setdefault(call.index, {"id": None, "name": None, "arguments": ""})
                slot["id"] = call.id or slot["id"]
                if call.function is not None:
                    slot["name"] = call.function.name or slot["name"]
                    slot["arguments"] += call.function.arguments or ""
            if self._outgoing.redact and withhold_fields(delta, first=choice.index not in self._marked):
                self._marked.add(choice.index)

    def _event(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        final = getattr(event, "response", None)
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self.final = final
            self.snapshot = snapshot_of(final)
        if self._outgoing.readable:
            self._withhold(event, kind, final)
        if not self._outgoing.redact:
            return
        _blank_event_text(event, kind, self._marked)
        item = getattr(event, "item", None)
        if item is not None:
            blank_item(item)
        for output in getattr(final, "output", None) or ():
            blank_item(output)

    def _withhold(self, event: Any, kind: str | None, final: Any) -> None:
        """A summary only loom-otel asked for: its events carry no text (they still arrive, empty: a
        stream cannot lose events), its items and responses none at all."""
        _blank_event_text(event, kind)
        item = getattr(event, "item", None)
        if item is not None:
            withhold_item(item)
        withhold_summaries(final, self._outgoing.app_summary())

    def messages(self) -> list[Any]:
        """The chat messages the stream delivered, one per choice, with their reasoning."""
        return [self._message(m) for _, m in sorted(self._messages.items())]

    @staticmethod
    def _message(accumulated: dict[str, Any]) -> Any:
        from openai.types.chat import ChatCompletionMessage

        calls = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for _, c in sorted(accumulated["calls"].items())
        ]
        return ChatCompletionMessage.model_validate(
            {"role": "assistant", "content": accumulated["content"] or None, "tool_calls": calls or None}
            | accumulated["reasoning"]
        )
