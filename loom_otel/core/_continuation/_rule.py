"""The continuation rule (ADR D5, DESIGN "Continuation"), once for every vendor.

A vendor adapter describes the request the SDK is about to send as a ``Header`` (provider, the model
when the vendor binds to it, digests of system and tools) and a list of ``MessageView`` whose items
are either the canonical bytes of an ordinary block or a ``Block`` (a reasoning block, keyed by the
digest of its signature). ``Continuation.plan`` walks the request in transcript order, against the
request as it will be sent (after the drops already decided), and applies ONE rule: a block whose
recorded binding does not match is dropped. Readable text the application does not hold is put back
from the store (sealed to this execution, digest-checked); an unresolvable block is dropped (and, since
it is gone from the prefix, so is every later block bound to it); a stripped tool round whose prefix is
unchanged gets its reasoning back. Blocks loom-otel never saw, and tool-call signatures, stay.

The binding of a block is one running SHA-256 over the header, each earlier message (a head naming
its role, then its items) and the earlier items of its own message: ``plan`` keeps that hash as it
goes, so the pass is linear in the request, and ``record`` continues the same hash over a response.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from loom_otel.core._continuation._bindings import Bindings, BlockRecord, RoundBlock, RoundRecord
from loom_otel.core._continuation._discards import DiscardCheck
from loom_otel.core._continuation._rehydrate import Texts, resolve_text
from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._evidence._attributes import AttributeValue
from loom_otel.core._evidence._canonical import text_bytes, text_digest
from loom_otel.core._evidence._model import ReasoningPart
from loom_otel.core._evidence._store._protocol import DigestKeyStore, ReasoningStore, keyed_digest
from loom_otel.core._runtime._context import ExecutionScope, current_execution
from loom_otel.core._runtime._memo import BoundedMemo

__all__ = [
    "Block",
    "Continuation",
    "EventSink",
    "Header",
    "MessageView",
    "Owner",
    "Plan",
    "Produced",
    "digest_of",
    "readable",
    "record_digest",
]

_DOMAIN: Final = b"loom-otel/binding/v1\x00"
_HISTORY: Final = b"loom-otel/history/v1\x00"
_SEP: Final = b"\x1e"

# Drop reasons (``loom.reasoning.drop.reason``).
PROVIDER_CHANGED: Final = "provider_changed"
MODEL_CHANGED: Final = "model_changed"
SYSTEM_CHANGED: Final = "system_changed"
TOOLS_CHANGED: Final = "tools_changed"
PREFIX_CHANGED: Final = "prefix_changed"
FOLLOWS_DROPPED: Final = "follows_dropped"
UNRESOLVABLE: Final = "unresolvable"


def digest_of(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def record_digest(text: str | None, part: ReasoningPart | None, *, keyed: bool) -> str | None:
    """The digest a binding record keeps of a produced block's readable text: the captured part's
    (plain or keyed, as ``LOOM_OTEL_DIGEST`` says); without one, the plain SHA-256, unless digests
    are keyed (``hmac-sha256``: no plain digest of a text is ever written beside the journal)."""
    if not text:
        return None
    if part is not None and part.digest:
        return part.digest
    return None if keyed else text_digest(text)


class EventSink(Protocol):
    """Where a plan tells what it changed: the model call's span (the rule never names the call)."""

    def add_event(self, name: str, attributes: Mapping[str, AttributeValue]) -> None: ...


class Owner(Protocol):
    """The call a response's blocks are recorded for: its execution, tenant and principal, and whether
    ``execution()`` named the execution (the call's identity; the rule never names the call)."""

    @property
    def execution_id(self) -> str: ...
    @property
    def tenant(self) -> str | None: ...
    @property
    def principal(self) -> str | None: ...
    @property
    def named_execution(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Header:
    """What binds every block of a request besides its messages."""

    provider: str
    model: str | None
    system: bytes
    tools: bytes

    def start(self) -> hashlib._Hash:
        h = hashlib.sha256(_DOMAIN)
        h.update(b"\x00".join((self.provider.encode(), (self.model or "").encode(), self.system, self.tools)) + _SEP)
        return h


@dataclass(slots=True)
class Block:
    """A reasoning block (or a signature on a part) in an outgoing request."""

    key: bytes
    canon: bytes
    text: str | None = None
    """Readable text as the application passed it; ``None`` where the block has no text field."""
    droppable: bool = True
    """``False`` for a tool-call signature: it is never dropped."""
    held: bool = True
    """``False`` for a signature loom-otel put back (found by a visible id): it proves no lineage."""


Item = bytes | Block


@dataclass(slots=True)
class MessageView:
    head: bytes
    items: list[Item]
    round_key: str | None = None
    """A tool call id of the turn: the key to put back reasoning the application stripped."""


@dataclass(frozen=True, slots=True)
class Produced:
    """A reasoning block of a response, for ``record``."""

    key: bytes
    canon: bytes
    kind: str
    signature: str
    text_digest: str | None
    ref: str | None = None
    split: tuple[int, ...] = ()
    """Lengths of the vendor parts the block's text is spread over (see ``BlockRecord.split``)."""


@dataclass(slots=True)
class Plan:
    """What to change in one request, and the prefix hash the response continues."""

    header: Header
    chain: hashlib._Hash
    drops: dict[tuple[int, int], str] = field(default_factory=dict)
    texts: dict[tuple[int, int], str] = field(default_factory=dict)
    restored: dict[int, list[tuple[int, RoundBlock, str | None]]] = field(default_factory=dict)
    """message index -> (position in the new content, block, text to send)."""
    kept: dict[tuple[int, int], tuple[str, str]] = field(default_factory=dict)
    """Blocks the rule would drop but that go out as the application holds them: position ->
    (the drop reason, why not: ``vendor_drops`` or ``tool_round``)."""
    lineage: ExecutionScope | None = None
    """The execution the call joins (DESIGN "Execution identity", rule 2), when the plan was made without
    a known scope: that of ``bound``, when it may be joined."""
    bound: BlockRecord | None = None
    """The record of the request's latest block (one the application holds) whose binding holds in the
    request as it will be sent."""
    reads: bool = False
    """A first pass (``Continuation.plan``) met a text it would have to read from the store."""
    history: hashlib._Hash | None = None
    """The running digest of the messages as the application sends them (no header, no drops): what
    ``BlockRecord.history`` continues."""
    sent_back: int = 0
    """Reasoning blocks this process recorded that the application sent back (``_discards``)."""
    stripped: list[tuple[int, str]] = field(default_factory=list)
    """Responses that began with reasoning, sent back without any (message index, execution)."""
    required: int | None = None
    """The message the vendor rejects the request without the reasoning it began with (``Continuation.plan``)."""

    def put_back(self) -> list[str]:
        """The readable texts this plan puts into the request (redact mode keeps them from the app)."""
        restored = [text for blocks in self.restored.values() for _, _, text in blocks if text]
        return [*self.texts.values(), *restored]

    @property
    def changes(self) -> bool:
        return bool(self.drops or self.texts or self.restored)

    def events(self, path: Callable[[int, int], str]) -> list[tuple[str, dict[str, AttributeValue]]]:
        """``loom.reasoning.dropped`` per reason (first-seen order) and ``loom.reasoning.restored``."""
        out: list[tuple[str, dict[str, AttributeValue]]] = []
        by_reason: dict[str, list[str]] = {}
        for (i, j), reason in self.drops.items():
            by_reason.setdefault(reason, []).append(path(i, j))
        for reason, positions in by_reason.items():
            out.append(
                (
                    attr.EVENT_DROPPED,
                    {attr.DROP_REASON: reason, attr.DROP_COUNT: len(positions), attr.DROP_POSITIONS: positions},
                )
            )
        kept: dict[tuple[str, str], list[str]] = {}
        for (i, j), reasons in self.kept.items():
            kept.setdefault(reasons, []).append(path(i, j))
        for (reason, because), positions in kept.items():
            out.append(
                (
                    attr.EVENT_KEPT,
                    {
                        attr.DROP_REASON: reason,
                        attr.KEPT_BECAUSE: because,
                        attr.DROP_COUNT: len(positions),
                        attr.DROP_POSITIONS: positions,
                    },
                )
            )
        if self.restored:
            kinds = sorted({b.kind for blocks in self.restored.values() for _, b, _ in blocks})
            positions = [path(i, p) for i, blocks in self.restored.items() for p, _, _ in blocks]
            out.append(
                (
                    attr.EVENT_RESTORED,
                    {
                        attr.RESTORE_KIND: ",".join(kinds),
                        attr.RESTORE_COUNT: len(positions),
                        attr.RESTORE_POSITIONS: positions,
                    },
                )
            )
        return out

    def emit(self, sink: EventSink, path: Callable[[int, int], str]) -> None:
        """Tell ``sink`` (the model call's span) what the plan changed, positions named by ``path``."""
        if not (self.drops or self.kept or self.restored):  # most requests: nothing to tell
            return
        for name, attributes in self.events(path):
            sink.add_event(name, attributes)

    def with_restored(
        self, index: int, content: Sequence[Any], block_of: Callable[[RoundBlock, str | None], Any]
    ) -> list[Any]:
        """Message ``index``'s ``content`` with the reasoning blocks the rule restores put back at their
        recorded positions (``block_of(block, text)`` builds the vendor's block); ``content`` itself when
        the rule restores none there."""
        restored = self.restored.get(index)
        if not restored:
            return list(content)
        by_position = {position: (block, text) for position, block, text in restored}
        rest = iter(content)
        return [
            block_of(*by_position[position]) if position in by_position else next(rest)
            for position in range(len(content) + len(restored))
        ]


def _mismatch(header: Header, record: BlockRecord, h: hashlib._Hash, shadow: hashlib._Hash | None) -> str | None:
    """Why the block's recorded binding does not match the request as it will be sent (``h``: the chain
    so far; ``shadow``: the chain as the application sent it, once a drop made them differ)."""
    if h.copy().digest() == record.binding:
        return None
    if record.provider != header.provider:
        return PROVIDER_CHANGED
    if record.model != header.model:
        return MODEL_CHANGED
    if record.system != header.system:
        return SYSTEM_CHANGED
    if record.tools != header.tools:
        return TOOLS_CHANGED
    if shadow is not None and shadow.copy().digest() == record.binding:
        return FOLLOWS_DROPPED
    return PREFIX_CHANGED


def _rewritten_round(record: RoundRecord, plain: Sequence[bytes], scope: ExecutionScope | None) -> bool:
    """Whether a tool round whose other blocks a framework dropped or rewrote (CrewAI sends the tool calls
    alone, AutoGen the thought as a text block before them) may get its reasoning back: only inside the
    explicit ``execution()`` the call runs in (each block must also be that execution's: ``_restore``),
    when the turn still ends with the tool calls it was produced with (ids, names and arguments) and its
    reasoning led the turn (the signature of a leading block binds only what came before the turn)."""
    explicit = current_execution()
    if scope is None or explicit is None or explicit.execution_id != scope.execution_id or not record.calls:
        return False
    if any(block.position != n for n, block in enumerate(record.blocks)):
        return False
    return any(digest_of(_SEP.join(plain[start:])) == record.calls for start in range(len(plain)))


def readable(record: BlockRecord, scope: ExecutionScope) -> bool:
    """Whether a call of ``scope`` may read back (or put back) the block ``record`` describes: recorded
    for the same tenant and execution, and for the same principal when both name one."""
    if record.tenant != scope.tenant:
        return False
    if record.execution is not None and record.execution != scope.execution_id:
        return False
    return record.principal is None or scope.principal is None or record.principal == scope.principal


def _joinable(record: BlockRecord | None) -> ExecutionScope | None:
    """The execution a call with no scope joins through ``record`` (a block whose binding holds), of no
    tenant: one no ``execution()`` named, or one this process named (a call that lost its context);
    never, across a restart or from another process, one an application named (its blobs would be
    sealed to that execution, read and erased with it)."""
    if record is None or record.execution is None or record.tenant is not None:
        return None
    if record.named and not record.local:
        return None
    return ExecutionScope(record.execution, None, record.principal)


class Continuation:
    """The rule, bound to one process's records and store."""

    def __init__(
        self, bindings: Bindings, store: Texts | ReasoningStore | None, discards: DiscardCheck | None = None
    ) -> None:
        self.bindings = bindings
        self.discards = discards
        """Counts what each request carries back (``Runtime.discards``); ``None``: nothing is counted."""
        self.texts = store if isinstance(store, Texts) else Texts(store)
        """Where texts come back from: each scope's store, or the application's resolver (``Runtime.texts``)."""
        self._digests: BoundedMemo[str, str] = BoundedMemo(4096)
        """SHA-256 of texts a loop resends again and again."""

    def plan(
        self,
        header: Header,
        messages: Sequence[MessageView],
        scope: ExecutionScope | None,
        *,
        vendor_drops: bool = False,
        protected: frozenset[tuple[int, int]] = frozenset(),
        required: int | None = None,
    ) -> Plan:
        """``_decide``, then the discard check (``_discards``: may raise ``ReasoningContinuationError``).
        ``required``: the message the vendor rejects the request without the reasoning it began with (the
        assistant turn of an in-flight tool round, thinking on: Anthropic, Bedrock), if any."""
        plan = self._decide(header, messages, scope, vendor_drops, protected)
        plan.required = required
        if self.discards is not None:
            self.discards.check(plan)
        return plan

    def _decide(
        self,
        header: Header,
        messages: Sequence[MessageView],
        scope: ExecutionScope | None,
        vendor_drops: bool,
        protected: frozenset[tuple[int, int]],
    ) -> Plan:
        """Decide drops, texts and restorations for a request; raises ``ReasoningContinuationError``
        when the store fails while a text is being fetched.

        ``scope`` is the call's execution when known (``ModelCall.request_scope()``); ``None``: the
        request's lineage is found (``Plan.lineage``, DESIGN "Execution identity" rule 2) and texts are
        read back from that execution only. The lineage is the execution of the request's latest
        reasoning block whose recorded binding holds in the request as it will be sent, or that stands in
        the conversation it was handed in (``BlockRecord.history``: a changed system prompt, tool list or
        model unbinds a block, it does not end a conversation; such a block gets no text) (a block holds
        a vendor-issued secret by construction: it is keyed by its signature), recorded for no tenant and
        for an execution no ``execution()`` named, or one this process named (``_joinable``); a first
        pass finds it without reading the store, a second reads the texts from it (and, if a text it
        needs cannot be had there so that the block no longer binds, the call joins nothing and nothing
        is read).

        Never worse than bare (DESIGN): with ``vendor_drops`` (the request asks the vendor to drop stale
        blocks itself) nothing is dropped here; a block at a ``protected`` position (one a vendor rule
        requires, such as the thinking block an in-flight tool round starts with) is never dropped.
        Either way the block goes out as the application holds it (no text is put back into it) and
        ``Plan.kept`` says why."""
        if scope is not None:
            return self._walk(header, messages, scope, vendor_drops, protected)
        probe = self._walk(header, messages, None, vendor_drops, protected, probe=True)
        lineage = _joinable(probe.bound)
        if lineage is None:
            if not probe.reads:
                return probe
            return self._walk(header, messages, None, vendor_drops, protected)
        if not probe.reads:  # nothing to read from the store: the first pass is the plan
            probe.lineage = lineage
            return probe
        plan = self._walk(header, messages, lineage, vendor_drops, protected)
        if _joinable(plan.bound) != lineage:
            return self._walk(header, messages, None, vendor_drops, protected)
        plan.lineage = lineage
        return plan

    def _walk(
        self,
        header: Header,
        messages: Sequence[MessageView],
        scope: ExecutionScope | None,
        vendor_drops: bool,
        protected: frozenset[tuple[int, int]],
        *,
        probe: bool = False,
    ) -> Plan:
        """One pass of the rule (``plan``). ``probe``: no store is read, every text is taken as one that
        can be had (``Plan.reads`` says whether one was needed)."""
        plan = Plan(header, header.start())
        h = plan.chain
        shadow: hashlib._Hash | None = None  # the chain as the application sent it, once it differs
        held = plan.history = hashlib.sha256(_HISTORY)  # the conversation as held: no header, no drops
        lookup = self.bindings.block
        discards = self.discards
        for i, message in enumerate(messages):
            items = message.items
            watched = discards is not None and discards.watches(message.head)
            bare = (message.round_key is not None or watched) and not any(isinstance(x, Block) for x in items)
            if bare and message.round_key is not None:
                items = self._restore(plan, i, message, scope, probe=probe) or items
            h.update(message.head)
            held.update(message.head)
            if bare and watched and discards is not None:
                produced = discards.stripped(held.digest())
                if produced is not None:
                    plan.stripped.append((i, produced))
            if shadow is not None:
                shadow.update(message.head)
            for j, item in enumerate(items):
                if isinstance(item, bytes):
                    h.update(item + _SEP)
                    held.update(item + _SEP)
                    if shadow is not None:
                        shadow.update(item + _SEP)
                    continue
                record = lookup(item.key)
                if record is not None and item.held and i not in plan.restored:
                    plan.sent_back += 1
                # the application holds the block in the conversation it was handed in (its messages;
                # a changed system prompt, tool list or model unbinds it, and no more)
                if (
                    record is not None
                    and record.history
                    and item.held
                    and i not in plan.restored
                    and held.copy().digest() == record.history
                ):
                    plan.bound = record
                held.update(item.canon + _SEP)
                if record is None:
                    keep = True
                elif not item.droppable:  # a tool-call signature: never dropped; it binds if it matches
                    keep = True
                    if item.held and i not in plan.restored and h.copy().digest() == record.binding:
                        plan.bound = record
                else:
                    reason = _mismatch(plan.header, record, h, shadow)
                    if reason is None:
                        if self._put_back(plan, record, item, (i, j), scope, probe=probe):
                            if item.held and i not in plan.restored:
                                plan.bound = record
                        else:
                            reason = UNRESOLVABLE
                    if reason is not None and (vendor_drops or (i, j) in protected):
                        # kept as the application holds it: its binding does not hold, nothing is put back
                        plan.kept[(i, j)] = (reason, "vendor_drops" if vendor_drops else "tool_round")
                        reason = None
                    keep = reason is None
                    if not keep:
                        assert reason is not None
                        plan.drops[(i, j)] = reason
                        if shadow is None:
                            shadow = h.copy()
                if keep:
                    h.update(item.canon + _SEP)
                if shadow is not None:
                    shadow.update(item.canon + _SEP)
        return plan

    def _put_back(
        self,
        plan: Plan,
        record: BlockRecord,
        block: Block,
        at: tuple[int, int],
        scope: ExecutionScope | None,
        *,
        probe: bool = False,
    ) -> bool:
        """Whether the block can go out with the text it was produced with: it has none, the application
        sends it, or it is put back from the store (``plan.texts``); ``False``: it cannot be had (also
        when the block was recorded for another tenant, execution or principal: it is never read)."""
        if record.text_digest is None or block.text is None:
            return True
        if block.text and self._same_text(block.text, record.text_digest, scope):
            return True
        if probe:
            plan.reads = True
            return True
        if scope is None or not readable(record, scope):
            return False
        text = resolve_text(self.texts, scope, record.ref, record.text_digest)
        if text is None:
            return False
        plan.texts[at] = text
        return True

    def _same_text(self, text: str, digest: str, scope: ExecutionScope | None) -> bool:
        """Whether the application sends the text the record was made for (a keyed digest is checked
        under the execution's key, asked of the store only when the plain digest differs)."""
        if self._digests.get(text, text_digest) == digest:
            return True
        store = self.texts.store_of(scope) if scope is not None else None
        if scope is None or not isinstance(store, DigestKeyStore):
            return False
        key = store.digest_key(scope.tenant, scope.execution_id)
        return key is not None and keyed_digest(text_bytes(text), key) == digest

    def _restore(
        self, plan: Plan, i: int, message: MessageView, scope: ExecutionScope | None, *, probe: bool = False
    ) -> list[Item] | None:
        """Put back the reasoning of a tool round the application stripped, if nothing before it or in
        it changed, every block was recorded for the call's tenant (and principal, execution), and every
        text can be had (``probe``: taken as one that can be, ``Plan.reads`` set)."""
        assert message.round_key is not None
        record = self.bindings.round(message.round_key)
        if record is None or plan.chain.copy().digest() != record.prefix:
            return None
        plain = [x for x in message.items if isinstance(x, bytes)]
        rewritten = digest_of(_SEP.join(plain)) != record.rest
        if rewritten and not _rewritten_round(record, plain, scope):
            return None
        blocks: list[tuple[int, RoundBlock, str | None]] = []
        for block in record.blocks:
            found = self.bindings.block(block.key)
            if found is None:
                return None
            if scope is None and (found.tenant is not None or (not probe and found.text_digest is not None)):
                return None
            if scope is not None and not readable(found, scope):
                return None
            if rewritten and (found.execution is None or not found.named):
                return None
            text: str | None = None
            if found.text_digest is not None:
                if probe:
                    plan.reads = True
                    text = ""
                else:
                    text = resolve_text(self.texts, scope, found.ref, found.text_digest)
                    if text is None:
                        return None
            blocks.append((block.position, block, text))
        items: list[Item] = []
        rest = iter(plain)
        by_position = {b[0]: b for b in blocks}
        for position in range(len(plain) + len(blocks)):
            entry = by_position.get(position)
            if entry is None:
                items.append(next(rest))
            else:
                items.append(Block(entry[1].key, entry[1].canon, None))
        plan.restored[i] = blocks
        return items

    def record(
        self,
        plan: Plan,
        head: bytes,
        items: Sequence[bytes | Produced],
        round_keys: Sequence[str],
        owner: Owner,
    ) -> None:
        """Remember the binding of every reasoning block of a response to the request ``plan`` saw, and
        the call (``owner``: its execution, tenant, principal, and whether ``execution()`` named it)
        that produced it."""
        header = plan.header
        h = plan.chain.copy()
        prefix = h.digest()
        h.update(head)
        held = plan.history.copy() if plan.history is not None else None
        if held is not None:
            held.update(head)
        records: list[tuple[bytes, BlockRecord]] = []
        blocks: list[RoundBlock] = []
        plain: list[bytes] = []
        for position, item in enumerate(items):
            if isinstance(item, bytes):
                plain.append(item)
                h.update(item + _SEP)
                if held is not None:
                    held.update(item + _SEP)
                continue
            binding = h.copy().digest()
            history = held.digest() if held is not None else b""
            if position == 0 and self.discards is not None:
                self.discards.produced(head, history, owner.execution_id)
            if held is not None:
                held.update(item.canon + _SEP)
            records.append(
                (
                    item.key,
                    BlockRecord(
                        binding,
                        header.provider,
                        header.model,
                        header.system,
                        header.tools,
                        item.text_digest,
                        item.ref,
                        item.split,
                        owner.execution_id,
                        owner.tenant,
                        owner.principal,
                        owner.named_execution,
                        True,
                        history,
                    ),
                )
            )
            if round_keys:  # a turn that called tools: its round record puts the block back
                blocks.append(RoundBlock(position, item.kind, item.key, item.canon, item.signature))
            h.update(item.canon + _SEP)
        rounds: list[tuple[str, RoundRecord]] = []
        if blocks and round_keys:
            calls = digest_of(_SEP.join(plain[-len(round_keys) :])) if len(plain) >= len(round_keys) else b""
            round_ = RoundRecord(prefix, digest_of(_SEP.join(plain)), tuple(blocks), calls)
            rounds = [(key, round_) for key in round_keys]
        if records:
            self.bindings.add(records, rounds)
