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

from collections.abc import Mapping, Sequence
from typing import Any

from loom_otel.core import Reasoning
from loom_otel.core.vendor import (
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
from loom_otel.instrumentation.openai._readable import withhold_summaries
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
from loom_otel.instrumentation.openai._stream_layers import RedactingLayer, blank_item, snapshot_of, withhold_fields

__all__ = ["OpenAiContinuation", "Outgoing"]


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
        return RedactingLayer(self, accumulator)

    def dropped(self, call: ModelCall, response: Any) -> None:
        """The Responses API's ``input_transformations`` (of the response, or a stream's final one)."""
        if self.chat:
            return
        final = response.final if isinstance(response, RedactingLayer) else response
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
        streamed = response if isinstance(response, RedactingLayer) else None
        if self.chat:
            if self.adapter.redact:
                if streamed is not None:
                    messages = streamed.messages()
                else:
                    messages = [c.message for c in sorted(_get(response, "choices") or (), key=lambda c: c.index)]
                self._record_chat(call, messages, capture)
            return
        snapshot = streamed.snapshot if streamed is not None else snapshot_of(response)
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
        blanked one by one (``RedactingLayer``)."""
        if isinstance(response, RedactingLayer):
            return
        if self.readable:
            withhold_summaries(response, self.app_summary())
        if not self.adapter.redact:
            return
        if self.chat:
            for choice in _get(response, "choices") or ():
                withhold_fields(choice.message, first=True)
        else:
            for item in _get(response, "output") or ():
                blank_item(item)

    @property
    def redact(self) -> bool:
        """Redact mode: the application holds each readable text as ``WITHHELD``."""
        return self.adapter.redact

    def app_summary(self) -> object:
        """The reasoning summary the application asked for (``None``: none)."""
        reasoning = self.original.get("reasoning")
        return reasoning.get("summary") if isinstance(reasoning, Mapping) else None
