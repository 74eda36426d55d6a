"""Bedrock Converse <-> the continuation rule: the plan of a request, the ``Outgoing`` steps, the stream
layer and the record of responses; how a request reads to the rule is ``_request_view``.

A Converse block is a one-key dict (``text``, ``reasoningContent``, ``toolUse``, ``toolResult``, ...);
``reasoningContent`` holds ``reasoningText`` (text and signature: a ``thinking`` block of the rule) or
``redactedContent`` (bytes: a ``redacted_thinking`` block, its token the bytes in base64). What is
canonicalized is what botocore will send: ``None`` fields left out, bytes as base64. A thinking block is
identified by its signature, so a block the application holds without text (``transcript="redact"``)
binds exactly like the one the vendor returned. Bedrock is its own provider (``aws.bedrock``): a block
from the direct Anthropic API never binds here.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
from collections.abc import Mapping, Sequence
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
from loom_otel.core.vendor_helpers import WITHHELD, bindings_for, current_execution, record_digest
from loom_otel.instrumentation.bedrock._extractors import ConverseStreamAccumulator
from loom_otel.instrumentation.bedrock._request_view import (
    ASSISTANT_HEAD,
    REASONING_KINDS,
    THINKING,
    TOOL_CALL,
    content_of,
    header_of,
    json_bytes,
    kind_of,
    message_view,
    norm_value,
    reasoning_block,
    token_of,
)
from loom_otel.instrumentation.bedrock._stream_layers import Blanking

__all__ = ["BedrockContinuation", "Outgoing"]


class Outgoing(PlannedOutgoing):
    """One request after the rule (the base's steps), and how Converse's answer is bound and blanked."""

    __slots__ = ("adapter",)

    def __init__(self, adapter: BedrockContinuation, kwargs: dict[str, Any], plan: Plan) -> None:
        super().__init__(kwargs, plan, redact=adapter.redact)
        self.adapter = adapter

    def tap(self, accumulator: StreamAccumulator) -> StreamAccumulator:
        """In redact mode each event's reasoning text is blanked after capture saw it."""
        if self.blanks and isinstance(accumulator, ConverseStreamAccumulator):
            return Blanking(accumulator)
        return accumulator

    def bound(self, call: ModelCall, response: Any, capture: Capture | None, reasonings: Sequence[Reasoning]) -> None:
        """The bindings of the answer's reasoning blocks, read before ``scrub`` blanks their text."""
        if isinstance(response, Blanking):
            response = response.events
        if isinstance(response, ConverseStreamAccumulator):
            blocks: list[Any] = [block.block() for _, block in sorted(response.blocks.items())]
            for block in blocks:  # a streamed tool call's input is its joined JSON deltas
                use = block.get("toolUse")
                if isinstance(use, dict) and isinstance(use.get("input"), str):
                    try:
                        use["input"] = json.loads(use["input"]) if use["input"] else {}
                    except ValueError:
                        return
        else:
            blocks = _answer(response)
        self.adapter.record(self.plan, blocks, capture, call)

    def scrub(self, response: Any) -> None:
        """``transcript="redact"``: the application gets the answer without reasoning text, each withheld
        text ``WITHHELD`` (a framework drops an empty block; a stream's events were blanked one by one)."""
        if self.blanks and isinstance(response, Mapping):
            for block in _answer(response):
                text = block.get("reasoningContent", {}).get("reasoningText") if isinstance(block, dict) else None
                if isinstance(text, dict) and text.get("text"):
                    text["text"] = WITHHELD


def _answer(response: Any) -> list[Any]:
    output = response.get("output") if isinstance(response, Mapping) else None
    message = output.get("message") if isinstance(output, Mapping) else None
    return content_of(message)


class BedrockContinuation:
    """The continuation layer for one Bedrock instrumentor."""

    def __init__(self, runtime: Runtime) -> None:
        bindings = bindings_for(runtime.journal_dir, durability=runtime.journal_durability)
        self.rule = Continuation(bindings, runtime.store, runtime.discards)
        self.redact = runtime.transcript == "redact"
        self._keyed = runtime.digest != "sha256"

    def prepare(self, kwargs: dict[str, Any]) -> Outgoing | None:
        """Apply the rule to the parameters before botocore serializes them; ``None``: leave them alone.

        Raises ``ReasoningContinuationError`` when the store fails while text is being put back.
        """
        messages = kwargs.get("messages")
        if not isinstance(messages, list):
            return None
        views = [message_view(m) for m in messages]
        in_flight = _in_flight(messages, views)
        plan = self.rule.plan(
            header_of(kwargs),
            views,
            current_execution(),
            vendor_drops=False,
            protected=_tool_round(views, in_flight),
            required=in_flight if _thinking_on(kwargs) else None,
        )
        if plan.changes:
            kwargs = {**kwargs, "messages": _rebuild(messages, plan)}
        return Outgoing(self, kwargs, plan)

    def record(self, plan: Plan, blocks: Sequence[Any], capture: Capture | None, call: ModelCall) -> None:
        """Record the bindings of the answer's leading blocks (those ``_recorded_blocks`` keeps)."""
        kinds = [kind_of(block) for block in blocks]
        end = _recorded_blocks(kinds)
        if not end:
            return
        parts = iter(capture.parts if capture is not None else ())
        items: list[bytes | Produced] = []
        calls: list[str] = []
        for block, kind in zip(blocks[:end], kinds, strict=False):
            if kind in REASONING_KINDS:
                part = next(parts, None)
                found = reasoning_block(block, str(kind))
                if found is None:
                    continue
                ref = part.text_ref if part is not None else None
                digest = record_digest(found.text, part, keyed=self._keyed)
                token = token_of(block, str(kind))
                items.append(Produced(found.key, found.canon, str(kind), str(token), digest, ref))
                continue
            if kind == TOOL_CALL and isinstance(call_id := block["toolUse"].get("toolUseId"), str):
                calls.append(call_id)
            items.append(json_bytes(norm_value(block)))
        self.rule.record(plan, ASSISTANT_HEAD, items, calls, call.identity)


def _recorded_blocks(kinds: Sequence[object]) -> int:
    """How many leading blocks a binding record reads: none without a reasoning block; up to the last
    one; all of them when the turn calls tools (its round record needs them)."""
    end = 0
    for i, kind in enumerate(kinds):
        if kind == TOOL_CALL:
            return len(kinds) if end or REASONING_KINDS.intersection(kinds[i:]) else 0
        if kind in REASONING_KINDS:
            end = i + 1
    return end


def _in_flight(messages: list[Any], views: list[MessageView]) -> int | None:
    """The assistant message of an in-flight tool round (the last message answers its tool calls): with
    thinking on, Bedrock (as Anthropic) requires it to start with its thinking."""
    if len(messages) < 2 or not isinstance(messages[-1], Mapping) or messages[-1].get("role") != "user":
        return None
    if views[-2].round_key is None or not any(
        isinstance(b, Mapping) and "toolResult" in b for b in content_of(messages[-1])
    ):
        return None
    return len(messages) - 2


def _thinking_on(kwargs: Mapping[str, Any]) -> bool:
    fields = kwargs.get("additionalModelRequestFields")
    thinking = fields.get("thinking") if isinstance(fields, Mapping) else None
    return isinstance(thinking, Mapping) and thinking.get("type") not in (None, "disabled")


def _tool_round(views: list[MessageView], i: int | None) -> frozenset[tuple[int, int]]:
    """The leading reasoning blocks of the in-flight tool round ``i`` (``_in_flight``): never dropped."""
    if i is None:
        return frozenset()
    leading = itertools.takewhile(lambda item: isinstance(item, Block), views[i].items)
    return frozenset((i, j) for j, _ in enumerate(leading))


def _thinking_block(text: str, signature: str) -> dict[str, Any]:
    return {"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}


def _redacted_block(token: str) -> dict[str, Any]:
    try:
        data = base64.b64decode(token, validate=True)
    except binascii.Error:
        data = token.encode()
    return {"reasoningContent": {"redactedContent": data}}


def _rebuild(messages: list[Any], plan: Plan) -> list[Any]:
    """A new message list with the plan applied; messages the plan leaves alone are the same objects."""
    touched = {i for i, _ in plan.drops} | {i for i, _ in plan.texts} | set(plan.restored)
    out = list(messages)
    for i in touched:
        message = messages[i]
        if not isinstance(message, Mapping):
            continue
        content = content_of(message)
        content = plan.with_restored(i, content, _restored_block)
        new: list[Any] = []
        for j, block in enumerate(content):
            if (i, j) in plan.drops:
                continue
            text = plan.texts.get((i, j))
            if text is None:
                new.append(block)
            else:
                new.append(_thinking_block(text, str(token_of(block, THINKING))))
        out[i] = {**message, "content": new}
    return out


def _restored_block(block: RoundBlock, text: str | None) -> dict[str, Any]:
    if block.kind == THINKING:
        return _thinking_block(text or "", block.signature)
    return _redacted_block(block.signature)
