"""OpenAI-compatible APIs <-> continuation: lineage, the vendor's own drops, and ``transcript="redact"``.

- Responses API: a reasoning item joins the continuation rule (``Continuation.plan``) through its
  ``encrypted_content``, the secret the vendor issued (an item without one is an ordinary item: its ``id``
  proves nothing). Each input item is one view: its canonical bytes (a message by role and text, a
  function call by id, name and arguments, ...) or, for a reasoning item, a ``Block`` keyed by a digest of
  its ``encrypted_content``. The vendor drops stale items itself (``input_transformations``, reported as
  ``loom.reasoning.vendor_dropped``), so the rule drops nothing here (``vendor_drops``): it finds the
  lineage (an item whose recorded binding holds) and, in redact mode (the application holds each text as
  ``WITHHELD``), puts the summary (or ``reasoning_text``) texts back into the items that bind, from the
  call's execution, digest-checked; an item it cannot put them back into goes out with empty texts.
- Chat Completions issues no secret: there is NO lineage (DESIGN "Execution identity"). In redact mode
  the application gets ``WITHHELD`` in place of ``reasoning_content`` / ``reasoning`` (in a stream, the
  first reasoning delta of a choice; the later ones carry none); on the way out the placeholder never goes
  out, and inside an ``execution()`` scope only, an assistant message that carried reasoning gets it back
  (DeepSeek requires it on tool-call turns), from that execution. Its records are keyed by the scope
  (tenant, execution, principal) and a digest of the message (content and tool calls), so a message is
  never found for another scope. A text that cannot be had is left out (``loom.reasoning.dropped``,
  reason ``unresolvable``); a store that raises fails the call before anything is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from loom_otel.core import Reasoning
from loom_otel.core.vendor import (
    AccumulatorLayer,
    Capture,
    Continuation,
    ModelCall,
    Plan,
    Produced,
    Runtime,
    StreamAccumulator,
)
from loom_otel.core.vendor_helpers import (
    UNRESOLVABLE,
    WITHHELD,
    BlockRecord,
    ExecutionScope,
    attr,
    bindings_for,
    current_execution,
    readable,
    resolve_text,
)
from loom_otel.core.vendor_helpers import field as _get
from loom_otel.instrumentation.openai._readable import withhold_item, withhold_summaries
from loom_otel.instrumentation.openai._request_view import (
    FIELDS,
    chat_record,
    header_of,
    item_key,
    item_texts,
    item_view,
    message_key,
    produced_item,
    split_pieces,
)

__all__ = ["OpenAiContinuation", "Outgoing"]

_TEXT_EVENTS: Final = frozenset({"response.reasoning_summary_text.done", "response.reasoning_text.done"})
_SUMMARY_EVENTS: Final = "response.reasoning_summary_"
_DELTA_EVENTS: Final = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})


class OpenAiContinuation:
    """The continuation layer for one OpenAI instrumentor."""

    def __init__(self, runtime: Runtime) -> None:
        self.bindings = bindings_for(runtime.journal_dir, durability=runtime.journal_durability)
        self.rule = Continuation(self.bindings, runtime.texts, runtime.discards)
        self.source = runtime.texts
        self.redact = runtime.transcript == "redact"
        self.keyed = runtime.digest != "sha256"

    def prepare(self, chat: bool, kwargs: dict[str, Any]) -> Outgoing:
        """Find the request's lineage (Responses) and put readable reasoning back into what the
        application sends (redact mode); raises ``ReasoningContinuationError`` when the store fails."""
        outgoing = Outgoing(self, chat, kwargs)
        explicit = current_execution()
        if chat:
            items = kwargs.get("messages")
            if self.redact and isinstance(items, list | tuple):
                rebuilt, lost = self._chat_put_back(list(items), explicit, outgoing.texts)
                if rebuilt is not None:
                    outgoing.kwargs = {**kwargs, "messages": rebuilt}
                outgoing.lost = [f"messages.{i}" for i in lost]
            return outgoing
        items = kwargs.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list | tuple):
            items = []
        views = [item_view(item, self.redact) for item in items]
        plan = self.rule.plan(header_of(kwargs), views, explicit, vendor_drops=True)
        outgoing.plan, outgoing.lineage = plan, plan.lineage
        held = [i for i, item in enumerate(items) if (i, 0) not in plan.texts and _holds_placeholder(item)]
        if plan.texts or held:
            outgoing.kwargs = {**kwargs, "input": self._rebuild(list(items), plan, held)}
            outgoing.texts = plan.put_back()
        return outgoing

    def _rebuild(self, items: list[Any], plan: Plan, held: Sequence[int] = ()) -> list[Any]:
        """The input with the texts the rule put back (each into the item whose binding holds); an item
        ``held`` carries the placeholder with no text to put back: it goes out with empty texts, as the
        application was handed them before the placeholder (the vendor never gets ``WITHHELD``)."""
        for i in held:
            field, pieces = item_texts(items[i])
            kind = "summary_text" if field == "summary" else "reasoning_text"
            blank = ["" if p == WITHHELD else p for p in pieces]
            items[i] = {**_plain(items[i]), field: [{"type": kind, "text": t} for t in blank]}
        for (i, _), text in plan.texts.items():
            item = items[i]
            field, _ = item_texts(item)
            key = item_key(field, item)
            record = self.bindings.block(key) if key is not None else None
            split = record.split if record is not None and record.split else (len(text),)
            pieces = split_pieces(text, split) or [text]
            kind = "summary_text" if field == "summary" else "reasoning_text"
            items[i] = {**_plain(item), field: [{"type": kind, "text": t} for t in pieces]}
        return items

    def _chat_put_back(
        self, items: list[Any], scope: ExecutionScope | None, texts: list[str]
    ) -> tuple[list[Any] | None, list[int]]:
        """Redact mode, inside ``execution()``: each assistant message this scope produced with reasoning
        gets it back (from the scope's execution, digest-checked). The placeholder the application was
        handed (``WITHHELD``) never goes out: replaced so, or else taken out of the message."""
        changed, lost = False, []
        for i, sent in enumerate(items):
            if _get(sent, "role") != "assistant":
                continue
            held = [f for f in FIELDS if _get(sent, f) == WITHHELD]
            if any(_get(sent, f) for f in FIELDS if f not in held):
                continue
            item = {k: v for k, v in _plain(sent).items() if k not in held} if held else sent
            if held:
                items[i], changed = item, True
            found = self._lookup([(f, message_key(f, item, scope)) for f in FIELDS]) if scope is not None else None
            if found is None or scope is None:
                continue
            field, record = found
            text = None
            if readable(record, scope):
                text = resolve_text(self.source, scope, record.ref, record.text_digest or "")
            if text is None:
                lost.append(i)
                continue
            items[i] = {**_plain(item), field: text}
            texts.append(text)
            changed = True
        return (items if changed else None), lost

    def _lookup(self, keys: Sequence[tuple[str, bytes]]) -> tuple[str, BlockRecord] | None:
        for field, key in keys:
            record = self.bindings.block(key)
            if record is not None:
                return field, record
        return None

    def remember(self, records: list[tuple[bytes, BlockRecord]]) -> None:
        if records:
            self.bindings.add(records, [])


def _holds_placeholder(item: Any) -> bool:
    """A reasoning item with a piece the application was handed as ``WITHHELD`` (redact mode)."""
    return _get(item, "type") == "reasoning" and WITHHELD in item_texts(item)[1]


def _plain(item: Any) -> dict[str, Any]:
    if isinstance(item, Mapping):
        return dict(item)
    dumped: dict[str, Any] = item.model_dump(exclude_none=True)
    return dumped


class Outgoing:
    """One call after the pass: the kwargs to send, and the steps of the call's finish."""

    __slots__ = ("adapter", "chat", "kwargs", "lineage", "lost", "original", "plan", "readable", "texts")

    def __init__(self, adapter: OpenAiContinuation, chat: bool, kwargs: dict[str, Any]) -> None:
        self.adapter = adapter
        self.chat = chat
        self.kwargs = kwargs
        self.original = kwargs
        self.plan: Plan | None = None
        """The rule's plan of a Responses request."""
        self.lineage: ExecutionScope | None = None
        self.lost: list[str] = []
        """Chat positions whose reasoning could not be put back (redact mode)."""
        self.texts: list[str] = []
        """The readable texts put back (redact mode)."""
        self.readable = False
        """loom-otel asked for the summary the application did not (``LOOM_OTEL_REQUEST_READABLE``): the
        application gets the reasoning items without it."""

    @property
    def blanks(self) -> bool:
        """Whether readable reasoning is kept from the application (redact mode, or a summary only
        loom-otel asked for)."""
        return self.adapter.redact or self.readable

    def put_back(self) -> list[str]:
        return self.texts

    def attach(self, call: ModelCall) -> None:
        """The call joins the request's lineage; the rule's decisions (reasoning kept as the application
        holds it, or not put back) are events."""
        call.join(self.lineage)
        if self.plan is not None:
            self.plan.emit(call, lambda i, _: f"input.{i}")
        if self.lost:
            call.add_event(
                attr.EVENT_DROPPED,
                {attr.DROP_REASON: UNRESOLVABLE, attr.DROP_COUNT: len(self.lost), attr.DROP_POSITIONS: self.lost},
            )

    def tap(self, accumulator: StreamAccumulator) -> StreamAccumulator:
        return _RedactingLayer(self, accumulator)

    def dropped(self, call: ModelCall, response: Any) -> None:
        """The Responses API's ``input_transformations`` (of the response, or a stream's final one)."""
        if self.chat:
            return
        final = response.final if isinstance(response, _RedactingLayer) else response
        ids = {_get(item, "id"): i for i, item in enumerate(self.original.get("input") or ()) if _get(item, "id")}
        by_reason: dict[str, list[str]] = {}
        for entry in _get(final, "input_transformations") or ():
            if _get(entry, "action") == "removed":
                item_id = _get(entry, "id")
                position = f"input.{ids[item_id]}" if item_id in ids else str(item_id)
                by_reason.setdefault(str(_get(entry, "reason")), []).append(position)
        for reason, positions in by_reason.items():
            call.add_event(
                attr.EVENT_VENDOR_DROPPED,
                {attr.DROP_REASON: reason, attr.DROP_COUNT: len(positions), attr.DROP_POSITIONS: positions},
            )

    def bound(self, call: ModelCall, response: Any, capture: Capture | None, reasonings: Sequence[Reasoning]) -> None:
        """Responses: the binding of every reasoning item; Chat Completions, in redact mode only (nothing
        else is put back), each message's reasoning."""
        streamed = response if isinstance(response, _RedactingLayer) else None
        if self.chat:
            if self.adapter.redact:
                if streamed is not None:
                    messages = streamed.messages()
                else:
                    messages = [c.message for c in sorted(_get(response, "choices") or (), key=lambda c: c.index)]
                self._record_chat(call, messages, capture)
            return
        snapshot = streamed.snapshot if streamed is not None else _snapshot(response)
        if self.plan is not None and any(item_key(item_texts(i)[0], i) for i, _ in snapshot):
            self._record_items(call, snapshot, capture)

    def _record_chat(self, call: ModelCall, messages: Sequence[Any], capture: Capture | None) -> None:
        identity = call.identity
        if not identity.named_execution:  # outside execution() nothing is put back: nothing to record
            return
        parts = iter(capture.parts if capture is not None else ())
        records = []
        for message in messages:
            extra = getattr(message, "model_extra", None) or {}
            field = next((f for f in FIELDS if isinstance(extra.get(f), str) and extra[f]), None)
            if field is None:
                continue
            part = next(parts, None)
            owner = identity.scope
            key = message_key(field, message, owner)
            records.append((key, chat_record(extra[field], part, self.adapter.keyed, owner)))
        self.adapter.remember(records)

    def _record_items(
        self, call: ModelCall, snapshot: Sequence[tuple[Any, list[str]]], capture: Capture | None
    ) -> None:
        """The binding of every reasoning item of the response to the request the plan saw (its
        ``encrypted_content`` keys it); the parts of ``capture`` are in the order of the reasoning items."""
        assert self.plan is not None
        parts = iter(capture.parts if capture is not None else ())
        items: list[bytes | Produced] = []
        for item, pieces in snapshot:
            part = next(parts, None) if _get(item, "type") == "reasoning" else None
            items.append(produced_item(item, part, pieces, self.adapter.keyed))
        self.adapter.rule.record(self.plan, b"", items, (), call.identity)

    def scrub(self, response: Any) -> None:
        """``transcript="redact"``: the application never holds readable reasoning; a summary only
        loom-otel asked for is taken out whole (the bare response has none). A stream's events were
        blanked one by one (``_RedactingLayer``)."""
        if isinstance(response, _RedactingLayer):
            return
        if self.readable:
            withhold_summaries(response, self._app_summary())
        if not self.adapter.redact:
            return
        if self.chat:
            for choice in _get(response, "choices") or ():
                _withhold_fields(choice.message, first=True)
        else:
            for item in _get(response, "output") or ():
                _blank_item(item)

    def _app_summary(self) -> object:
        reasoning = self.original.get("reasoning")
        return reasoning.get("summary") if isinstance(reasoning, Mapping) else None


def _snapshot(response: Any) -> list[tuple[Any, list[str]]]:
    """A Responses response's output items with their reasoning texts, read before they are blanked."""
    return [(item, item_texts(item)[1]) for item in _get(response, "output") or ()]


def _blank_event_text(event: Any, kind: str | None, marked: set[object] | None = None) -> None:
    """A stream event's reasoning text (a delta, a done text, a reasoning part) is emptied in place. With
    ``marked`` (redact mode: the pieces already handed ``WITHHELD``), a piece's first text carries
    ``WITHHELD`` instead and its done text and part are ``WITHHELD``, as ``_blank_item`` hands an item."""
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


def _withhold_fields(obj: Any, *, first: bool) -> bool:
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


def _blank_item(item: Any) -> None:
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


class _RedactingLayer(AccumulatorLayer):
    """A stream's accumulator, plus what the finish's steps read at its end (the final response and its
    reasoning texts, the chat messages) and, in redact mode, blanking AFTER capture saw each event."""

    def __init__(self, outgoing: Outgoing, inner: StreamAccumulator) -> None:
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
            if self._outgoing.adapter.redact and _withhold_fields(delta, first=choice.index not in self._marked):
                self._marked.add(choice.index)

    def _event(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        final = getattr(event, "response", None)
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self.final = final
            self.snapshot = _snapshot(final)
        if self._outgoing.readable:
            self._withhold(event, kind, final)
        if not self._outgoing.adapter.redact:
            return
        _blank_event_text(event, kind, self._marked)
        item = getattr(event, "item", None)
        if item is not None:
            _blank_item(item)
        for output in getattr(final, "output", None) or ():
            _blank_item(output)

    def _withhold(self, event: Any, kind: str | None, final: Any) -> None:
        """A summary only loom-otel asked for: its events carry no text (they still arrive, empty: a
        stream cannot lose events), its items and responses none at all."""
        _blank_event_text(event, kind)
        item = getattr(event, "item", None)
        if item is not None:
            withhold_item(item)
        withhold_summaries(final, self._outgoing._app_summary())

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
