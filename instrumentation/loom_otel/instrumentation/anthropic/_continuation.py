"""Anthropic Messages <-> the continuation rule: the plan of a request, the ``Outgoing`` steps of the
call's finish, the stream layer that blanks what the application must not hold, and the record of what a
response produced. How a request reads to the rule (canonical blocks, the header) is ``_request_view``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from loom_otel.core import Reasoning
from loom_otel.core.vendor import (
    Block,
    Capture,
    Continuation,
    MessageView,
    ModelCall,
    Plan,
    PlannedOutgoing,
    Produced,
    RoundBlock,
    Runtime,
    StreamAccumulator,
)
from loom_otel.core.vendor_helpers import (
    WITHHELD,
    attr,
    bindings_for,
    current_execution,
    record_digest,
)
from loom_otel.core.vendor_helpers import field as _get
from loom_otel.instrumentation.anthropic._extractors import MessageStreamAccumulator
from loom_otel.instrumentation.anthropic._request_view import (
    ASSISTANT_HEAD,
    REASONING_KINDS,
    TOOL_CALLS,
    content_of,
    header_of,
    message_view,
    norm_value,
    plain_bytes,
    reasoning_block,
)
from loom_otel.instrumentation.anthropic._stream_layers import EVENTS, STREAMED, Blanking

__all__ = ["AnthropicContinuation", "Outgoing"]


class Outgoing(PlannedOutgoing):
    """One request after the rule (the base's steps), and how a Messages answer is bound and blanked."""

    __slots__ = ("adapter", "readable")

    def __init__(self, adapter: AnthropicContinuation, kwargs: dict[str, Any], plan: Plan) -> None:
        super().__init__(kwargs, plan, redact=adapter.redact)
        self.adapter = adapter
        self.readable = False
        """loom-otel asked for the readable summary the application did not (``LOOM_OTEL_REQUEST_READABLE``):
        the application gets the omitted blocks it asked for, and the text goes back from the store."""

    @property
    def blanks(self) -> bool:
        """Whether the application gets the thinking blocks without their text (redact mode, or a
        readable summary the application did not ask for)."""
        return self.redact or self.readable

    def tap(self, accumulator: StreamAccumulator) -> StreamAccumulator:
        """An event stream's capture accumulator keeps every block in order (what ``bound`` reads); when
        the application gets thinking without text, under ``Blanking``. The helper's snapshot reader
        (``Snapshot``) reads the final message: nothing to do per event."""
        if self.blanks and isinstance(accumulator, MessageStreamAccumulator):
            return Blanking(accumulator, withholds=self.readable)
        return accumulator

    def dropped(self, call: ModelCall, response: Any) -> None:
        """Beta ``input_transformations`` (of the message, or of a stream's ``message_start``)."""
        vendor_dropped(call, _get(_message(response), "input_transformations"))

    def bound(self, call: ModelCall, response: Any, capture: Capture | None, reasonings: Sequence[Reasoning]) -> None:
        """The bindings of the response's reasoning blocks, read before ``scrub`` blanks their text."""
        if not isinstance(response, EVENTS):
            self.adapter.record(self.plan, _get(_message(response), "content") or (), capture, call)
            return
        events = response.events if isinstance(response, Blanking) else response
        ordered = [block for _, block in sorted(events.blocks.items())]
        kinds = [_get(block.start, "type") for block in ordered]
        end = _recorded_blocks(kinds)
        if end:  # only the blocks the record reads are normalized (the answer after the thinking is not)
            self.adapter.record_leading(self.plan, _normalized(ordered[:end]), kinds, capture, call)

    def scrub(self, response: Any) -> None:
        """``transcript="redact"`` (or a summary only loom-otel asked for): the application gets the
        message without readable thinking (a stream's events were blanked one by one): in redact mode each
        withheld text is ``WITHHELD`` (a framework drops an empty block), a summary only loom-otel asked for
        is the empty text the application's request would have been answered with."""
        if self.blanks and not isinstance(response, EVENTS):
            for block in _get(_message(response), "content") or ():
                if _get(block, "type") == "thinking" and _get(block, "thinking"):
                    block.thinking = "" if self.readable else WITHHELD


def vendor_dropped(call: ModelCall, transformations: Any) -> None:
    """Beta ``input_transformations`` (``thinking_dropped``) as ``loom.reasoning.vendor_dropped``."""
    by_reason: dict[str, list[str]] = {}
    for entry in transformations or ():
        if _get(entry, "type") == "thinking_dropped":
            by_reason.setdefault(str(_get(entry, "reason")), []).append(str(_get(entry, "path")))
    for reason, positions in by_reason.items():
        call.add_event(
            attr.EVENT_VENDOR_DROPPED,
            {attr.DROP_REASON: reason, attr.DROP_COUNT: len(positions), attr.DROP_POSITIONS: positions},
        )


class AnthropicContinuation:
    """The continuation layer for one Anthropic instrumentor."""

    def __init__(self, runtime: Runtime) -> None:
        bindings = bindings_for(runtime.journal_dir, durability=runtime.journal_durability)
        self.rule = Continuation(bindings, runtime.texts, runtime.discards)
        self.redact = runtime.transcript == "redact"
        self._keyed = runtime.digest != "sha256"

    def prepare(self, provider: str, kwargs: dict[str, Any]) -> Outgoing | None:
        """Apply the rule to a request before the SDK serializes it; ``None``: leave it alone.

        Raises ``ReasoningContinuationError`` when the store fails while text is being put back.
        """
        thread = kwargs.get("thread")
        if thread is not None and isinstance(thread, Mapping) and thread.get("type") == "continue":
            return None
        messages = kwargs.get("messages")
        if not isinstance(messages, list):  # a list (the usual case) skips the ABC checks
            if not isinstance(messages, Iterable) or isinstance(messages, str | bytes | Mapping):
                return None
            messages = list(messages)
            kwargs = {**kwargs, "messages": messages}
        views = [message_view(m, self._known) for m in messages]
        in_flight = _in_flight(messages, views)
        plan = self.rule.plan(
            header_of(provider, kwargs),
            views,
            current_execution(),
            vendor_drops=_vendor_drops(kwargs),
            protected=_tool_round(views, in_flight),
            required=in_flight if _thinking_on(kwargs.get("thinking")) else None,
        )
        if plan.changes:
            kwargs = {**kwargs, "messages": _rebuild(messages, plan)}
        return Outgoing(self, kwargs, plan)

    def _known(self, key: bytes) -> bool:
        return self.rule.bindings.block(key) is not None

    def record(self, plan: Plan, blocks: Sequence[Any], capture: Capture | None, call: ModelCall) -> None:
        """Record the bindings of the response's reasoning blocks (those ``_recorded_blocks`` keeps)."""
        kinds = [_get(block, "type") for block in blocks]
        end = _recorded_blocks(kinds)
        if end:
            self.record_leading(plan, blocks[:end], kinds, capture, call)

    def record_leading(
        self, plan: Plan, blocks: Sequence[Any], kinds: Sequence[object], capture: Capture | None, call: ModelCall
    ) -> None:
        """``record`` of the leading blocks ``_recorded_blocks`` kept, whose types are ``kinds``."""
        parts = iter(capture.parts if capture is not None else ())
        items: list[bytes | Produced] = []
        calls: list[str] = []
        for block, kind in zip(blocks, kinds, strict=False):
            if kind in REASONING_KINDS:
                part = next(parts, None)
                found = reasoning_block(block, kind)
                if found is None:
                    continue
                ref = part.text_ref if part is not None else None
                digest = record_digest(found.text, part, keyed=self._keyed)
                token = _get(block, "signature" if kind == "thinking" else "data")
                items.append(Produced(found.key, found.canon, kind, str(token), digest, ref))
                continue
            if kind in TOOL_CALLS and isinstance(call_id := _get(block, "id"), str):
                calls.append(call_id)
            items.append(plain_bytes(block))
        self.rule.record(plan, ASSISTANT_HEAD, items, calls, call.identity)


def _recorded_blocks(kinds: Sequence[object]) -> int:
    """How many leading blocks of a response (by their types) a binding record reads: none without a
    reasoning block; up to the last one, since the blocks after it bind nothing; all of them when the
    turn calls tools (its round record needs them)."""
    end = 0
    for i, kind in enumerate(kinds):  # plain loops: a response has a few blocks
        if kind in TOOL_CALLS:
            return len(kinds) if end or REASONING_KINDS.intersection(kinds[i:]) else 0
        if kind in REASONING_KINDS:
            end = i + 1
    return end


def _vendor_drops(kwargs: Mapping[str, Any]) -> bool:
    """The request opts into the vendor's server-side handling of stale blocks (``block_binding`` with
    ``drop_block``): the vendor decides what goes, loom-otel drops nothing."""
    thinking = kwargs.get("thinking")
    binding = _get(thinking, "block_binding") if thinking is not None else None
    return binding is not None and _get(binding, "prefix_mismatch_behavior") == "drop_block"


def _in_flight(messages: list[Any], views: list[MessageView]) -> int | None:
    """The assistant message of an in-flight tool round (the last message answers its tool calls): with
    thinking on, the vendor requires it to start with its thinking block."""
    if len(messages) < 2 or _get(messages[-1], "role") != "user" or views[-2].round_key is None:
        return None
    if not any(_get(b, "type") == "tool_result" for b in content_of(messages[-1]) or ()):
        return None
    return len(messages) - 2


def _thinking_on(thinking: Any) -> bool:
    kind = _get(thinking, "type") if thinking is not None else None
    return isinstance(kind, str) and kind != "disabled"


def _tool_round(views: list[MessageView], i: int | None) -> frozenset[tuple[int, int]]:
    """The leading reasoning blocks of the in-flight tool round ``i`` (``_in_flight``): never dropped."""
    if i is None:
        return frozenset()
    leading = itertools.takewhile(lambda item: isinstance(item, Block), views[i].items)
    return frozenset((i, j) for j, _ in enumerate(leading))


def _rebuild(messages: list[Any], plan: Plan) -> list[Any]:
    """A new message list with the plan applied; messages the plan leaves alone are the same objects
    (the application's own history is never written to)."""
    touched = {i for i, _ in plan.drops} | {i for i, _ in plan.texts} | set(plan.restored)
    out = list(messages)
    for i in touched:
        message = messages[i]
        content = content_of(message)
        if not isinstance(message, Mapping) or not isinstance(content, list):
            continue
        content = plan.with_restored(i, content, _restored_block)
        new: list[Any] = []
        for j, block in enumerate(content):
            if (i, j) in plan.drops:
                continue
            text = plan.texts.get((i, j))
            if text is None:
                new.append(block)
            else:  # a thinking block (or google-adk's redacted form of one) with its text put back
                signature = _get(block, "signature") or _get(block, "data")
                new.append({"type": "thinking", "thinking": text, "signature": signature})
        out[i] = {**message, "content": new}
    return out


def _restored_block(block: RoundBlock, text: str | None) -> dict[str, Any]:
    if block.kind == "thinking":
        return {"type": "thinking", "thinking": text or "", "signature": block.signature}
    return {"type": "redacted_thinking", "data": block.signature}


def _message(response: Any) -> Any:
    """The message a step reads: the response, the helper's final snapshot, or a stream's
    ``message_start`` message (``None`` when nothing arrived)."""
    return response.message if isinstance(response, STREAMED) else response


def _normalized(blocks: Sequence[Any]) -> list[dict[str, Any]]:
    """Streamed blocks (``MessageStreamAccumulator`` blocks, in order), normalized like a complete
    response's blocks. A reasoning block is read for its text and signature only (``record_leading``),
    so only they are taken."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        kind = _get(block.start, "type")
        if kind == "thinking":
            out.append({"type": kind, "thinking": block.thinking_text(), "signature": block.signature})
            continue
        if kind == "redacted_thinking":
            out.append({"type": kind, "data": _get(block.start, "data")})
            continue
        normalized = norm_value(block.start)
        if kind == "text":
            normalized["text"] = "".join(block.texts)
            if block.citations:
                normalized["citations"] = [norm_value(c) for c in block.citations]
        if block.json:
            raw = "".join(block.json)
            try:
                normalized["input"] = json.loads(raw) if raw else {}
            except ValueError:
                continue
        out.append(normalized)
    return out
