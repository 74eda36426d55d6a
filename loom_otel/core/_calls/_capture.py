"""The capture pipeline (DESIGN "Capture"): store each readable text sealed, append the journal record
(fail-closed), then add the reference-only span event. One event and one record per model call."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from opentelemetry.trace import Span

from loom_otel.core._calls._as_built import add_event
from loom_otel.core._calls._identity import CallIdentity, baggage_principal, decide
from loom_otel.core._calls._keep import keeping_store
from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._evidence._attributes import AttributeValue
from loom_otel.core._evidence._canonical import text_bytes
from loom_otel.core._evidence._io_error import failure_detail, store_location
from loom_otel.core._evidence._journal._attempts import highest_in
from loom_otel.core._evidence._model import Reasoning, ReasoningKind, ReasoningPart
from loom_otel.core._evidence._store._protocol import DigestKeyStore, Envelope, ReasoningStore
from loom_otel.core._reading._viewer_link import reasoning_url
from loom_otel.core._runtime._config import Runtime
from loom_otel.core._runtime._context import ExecutionScope, current_execution, current_step, next_attempt
from loom_otel.core._runtime._memo import BoundedMemo
from loom_otel.core.exceptions import ReasoningCaptureError

__all__ = ["Capture", "capture"]

_T = TypeVar("_T")
_KINDS: BoundedMemo[tuple[str, ...], tuple[str, ...]] = BoundedMemo(256)
_OMITTED: BoundedMemo[tuple[bool, ...], tuple[bool, ...]] = BoundedMemo(256)
"""The parts' kinds and omitted flags, one shared tuple per shape (a few shapes recur): the event holds
them until it is exported, and tuples of its own would be objects the garbage collector counts."""


def _itself(value: _T) -> _T:
    return value


@dataclass(frozen=True, slots=True)
class Capture:
    """What one model call recorded."""

    identity: CallIdentity
    attempt: int
    parts: tuple[ReasoningPart, ...]
    attributes: dict[str, AttributeValue]


def _digest_key(runtime: Runtime, store: ReasoningStore, identity: CallIdentity) -> bytes | None:
    """``hmac-sha256`` mode: the execution's digest key, kept in (and erased with) its store scope."""
    if runtime.digest != "hmac-sha256":
        return None
    if not isinstance(store, DigestKeyStore):
        raise TypeError(f"{type(store).__name__} cannot keep digest keys (LOOM_OTEL_DIGEST=hmac-sha256)")
    return store.digest_key(identity.tenant, identity.execution_id, create=True)


def _part(
    runtime: Runtime, store: ReasoningStore | None, identity: CallIdentity, reasoning: Reasoning
) -> ReasoningPart:
    """``store``: where this call's texts go (``_keep.keeping_store``); ``None``: kept nowhere (omitted)."""
    text = reasoning.text
    if reasoning.kind is ReasoningKind.REDACTED or not text:
        return ReasoningPart(reasoning.kind, reasoning.provider, reasoning.signature)
    if store is None:
        return ReasoningPart(
            reasoning.kind, reasoning.provider, reasoning.signature, size=len(text_bytes(text)), omitted=True
        )
    try:
        key = _digest_key(runtime, store, identity)
        envelope = Envelope.seal(
            text,
            execution_id=identity.execution_id,
            tenant=identity.tenant,
            key=key,
            named=identity.named_execution,
            principal=identity.principal,
            owner=identity.owner,
        )
        ref = store.put(envelope)
    except Exception as exc:
        raise ReasoningCaptureError(
            f"reasoning store {type(store).__name__} failed to keep a {reasoning.kind} block "
            f"({failure_detail(exc, store_location(store))}): its text is not kept as evidence, so "
            "the model call fails closed (the response is not handed to the application, no record claims it)"
        ) from exc
    return ReasoningPart(reasoning.kind, reasoning.provider, reasoning.signature, ref, envelope.digest, envelope.size)


def _audience(runtime: Runtime, identity: CallIdentity, attributes: dict[str, AttributeValue], attempt: int) -> None:
    """Who may read the call back (``loom.principal``, ``loom.owner``) and, with ``LOOM_OTEL_VIEWER_URL``,
    where (``loom.reasoning.url``): durable in the record, so every worker answers the same."""
    if identity.principal:
        attributes[attr.PRINCIPAL] = identity.principal
    if identity.owner:
        attributes[attr.OWNER] = identity.owner
    if runtime.viewer_url is not None:
        attributes[attr.REASONING_URL] = reasoning_url(
            runtime.viewer_url, identity.execution_id, tenant=identity.tenant, step_id=identity.step_id, attempt=attempt
        )


def capture(
    runtime: Runtime,
    span: Span,
    reasonings: Sequence[Reasoning],
    *,
    provider: str,
    request_model: str,
    response_model: str | None,
    identity: CallIdentity | None = None,
    request_attributes: Mapping[str, AttributeValue] | None = None,
    layout: Sequence[str] = (),
    scope: ExecutionScope | None = None,
    keeping: Callable[[], ReasoningStore | None] | None = None,
) -> Capture | None:
    """Keep ``reasonings`` as evidence; ``None`` (and nothing recorded) when there are none.

    ``identity`` is the model call's (``ModelCall.identity``); without one (a capture outside a wrapped
    call) it is decided from ``span`` and the current scopes. ``request_attributes``: the request's
    thinking settings (``loom.request.thinking.*``), recorded as they are. ``layout``: the response's entries in vendor
    order (``core._evidence._layout``), recorded as ``loom.reasoning.layout``. Raises ``ReasoningCaptureError`` when the
    store or the journal cannot keep what is configured, or the capture predicate raises; then no event
    claims the parts. ``scope``: the call's explicit ``execution()`` (its own capture and store), if any.
    ``keeping``: the call's decision of where its texts go (``ModelCall.keeping``), made once per call.
    """
    if not reasonings or not runtime.enabled:
        return None
    context = span.get_span_context()
    if identity is None:
        principal = baggage_principal(runtime.principal_baggage)
        scope = current_execution()
        identity = decide(context, scope, None, current_step(), principal)
    store = None
    if any(r.text and r.kind is not ReasoningKind.REDACTED for r in reasonings):
        store = keeping() if keeping is not None else keeping_store(runtime, identity, scope, provider, request_model)
    parts = tuple([_part(runtime, store, identity, r) for r in reasonings])
    recorded = functools.partial(highest_in, runtime.journal_dir) if identity.named_execution else None
    attempt = next_attempt(
        identity.tenant, identity.execution_id, identity.step_id, named=identity.named_step, recorded=recorded
    )
    attributes: dict[str, AttributeValue] = {
        attr.EXECUTION_ID: identity.execution_id,
        attr.STEP_ID: identity.step_id,
        attr.ATTEMPT: attempt,
        attr.GEN_AI_PROVIDER_NAME: provider,
        attr.GEN_AI_REQUEST_MODEL: request_model,
        attr.GEN_AI_RESPONSE_MODEL: response_model or request_model,
        attr.PART_KIND: _KINDS.get(tuple([p.kind.value for p in parts]), _itself),
        attr.PART_REF: tuple([p.text_ref or "" for p in parts]),
        attr.PART_DIGEST: tuple([p.digest or "" for p in parts]),
        attr.PART_SIZE: tuple([p.size for p in parts]),
        attr.PART_OMITTED: _OMITTED.get(tuple([p.omitted for p in parts]), _itself),
    }
    if identity.tenant is not None:
        attributes[attr.TENANT] = identity.tenant
    if request_attributes:
        attributes.update(request_attributes)
    if layout:
        attributes[attr.LAYOUT] = tuple(layout)
    _audience(runtime, identity, attributes, attempt)
    if context.is_valid:  # where the call was made: a record resent from the journal joins its trace
        attributes[attr.CALL_TRACE_ID] = f"{context.trace_id:032x}"
        attributes[attr.CALL_SPAN_ID] = f"{context.span_id:016x}"
        attributes[attr.CALL_SAMPLED] = context.trace_flags.sampled
    try:
        entry = runtime.journal.append(attr.RECORD_CAPTURE, attributes)
    except Exception as exc:
        raise ReasoningCaptureError(
            f"audit journal {str(runtime.journal_dir)!r} could not be written "
            f"({failure_detail(exc, runtime.journal_dir)}): this call has no audit record, so the model "
            "call fails closed"
        ) from exc
    add_event(
        span,
        attr.EVENT_CAPTURED,
        {
            **attributes,
            attr.AUDIT_ORIGIN: entry.origin,
            attr.AUDIT_SEQ: entry.seq,
            attr.AUDIT_PREV: entry.prev,
            attr.AUDIT_HASH: entry.hash,
        },
        entry.time,
    )
    url = attributes.get(attr.REASONING_URL)
    if url is not None and span.is_recording():  # backends that ignore span events (Langfuse) show the span's
        span.set_attribute(attr.REASONING_URL, url)
    return Capture(identity, attempt, parts, attributes)
