"""Readable reasoning on the way out: fetched from the store, sealed to this execution, digest-checked.

Used by the continuation pass to rehydrate blocks the application holds without text
(``transcript="redact"``) and to put back a stripped tool round. ``None`` means "not this execution's,
erased, absent or altered" (the block is dropped); a store that raises fails the call.

``Texts`` is where a request's texts come from: the store of the request's scope (``execution(store=)``,
its tenant's, else the configured one) or, given, the application's resolver (ADR D3 "the authorizing
seam"): bytes, ``None`` (a definitive no: dropped) or raises (an outage: the call fails). The digest is
checked after either, always.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from loom_otel.core._evidence._canonical import text_of
from loom_otel.core._evidence._io_error import failure_detail, store_location
from loom_otel.core._evidence._store._protocol import DigestKeyStore, ReasoningStore, digest_matches
from loom_otel.core._runtime._context import ExecutionScope, current_step
from loom_otel.core._runtime._hooks import TextLookup, TextResolver
from loom_otel.core.exceptions import ReasoningContinuationError

__all__ = ["Texts", "resolve_text"]


def _digest_key(store: ReasoningStore | None, scope: ExecutionScope) -> bytes | None:
    if isinstance(store, DigestKeyStore):
        return store.digest_key(scope.tenant, scope.execution_id)
    return None


@dataclass(frozen=True, slots=True)
class Texts:
    """Where a request's texts come from (``Runtime.texts``): ``place`` names each scope's store, ``resolve``
    (the application's) reads them instead of the store when given."""

    store: ReasoningStore | None
    place: Callable[[ExecutionScope | None], ReasoningStore | None] | None = None
    resolve: TextResolver | None = None

    def store_of(self, scope: ExecutionScope | None) -> ReasoningStore | None:
        """The store of ``scope``'s texts; one that cannot be opened fails the call (nothing sent)."""
        if self.place is None:
            return self.store
        try:
            return self.place(scope)
        except Exception as exc:
            raise ReasoningContinuationError(
                f"the reasoning store of this execution could not be opened ({type(exc).__name__}); "
                "nothing was sent, retry the call"
            ) from None


def _body(source: Texts, store: ReasoningStore | None, scope: ExecutionScope, ref: str, digest: str) -> bytes | None:
    if source.resolve is not None:
        lookup = TextLookup(scope.tenant, scope.execution_id, current_step(), scope.principal, ref, digest)
        try:
            return source.resolve(lookup)
        except Exception as exc:
            raise ReasoningContinuationError(
                f"the reasoning resolver failed ({type(exc).__name__}) while reasoning was being put back into "
                "a request; nothing was sent, retry the call"
            ) from None
    if store is None:
        return None
    try:
        return store.get(ref, tenant=scope.tenant, execution_id=scope.execution_id)
    except Exception as exc:
        raise ReasoningContinuationError(
            f"reasoning store {type(store).__name__} failed while reasoning was being put back into a "
            f"request ({failure_detail(exc, store_location(store))}); nothing was sent, retry the call"
        ) from None


def resolve_text(
    source: Texts | ReasoningStore | None, scope: ExecutionScope | None, ref: str | None, digest: str
) -> str | None:
    """The text sealed under ``ref`` for ``scope`` (the request's execution) if it still hashes to
    ``digest``; else ``None``.

    Raises ``ReasoningContinuationError`` when the store or the resolver itself fails (the message names
    the store type and the exception type only).
    """
    texts = source if isinstance(source, Texts) else Texts(source)
    if scope is None or not ref:
        return None
    store = texts.store_of(scope)
    body = _body(texts, store, scope, ref, digest)
    if not isinstance(body, bytes) or not digest_matches(body, digest, lambda: _digest_key(store, scope)):
        return None
    return text_of(body)
