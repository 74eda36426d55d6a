"""Readable reasoning on the way out: fetched from the store, sealed to this execution, digest-checked.

Used by the continuation pass to rehydrate blocks the application holds without text
(``transcript="redact"``) and to put back a stripped tool round. ``None`` means "not this execution's,
erased, absent or altered" (the block is dropped); a store that raises fails the call.
"""

from __future__ import annotations

from loom_otel.core._canonical import text_of
from loom_otel.core._context import ExecutionScope
from loom_otel.core._io_error import failure_detail, store_location
from loom_otel.core._store._protocol import DigestKeyStore, ReasoningStore, digest_matches
from loom_otel.core.exceptions import ReasoningContinuationError

__all__ = ["resolve_text"]


def _digest_key(store: ReasoningStore, scope: ExecutionScope) -> bytes | None:
    if isinstance(store, DigestKeyStore):
        return store.digest_key(scope.tenant, scope.execution_id)
    return None


def resolve_text(
    store: ReasoningStore | None, scope: ExecutionScope | None, ref: str | None, digest: str
) -> str | None:
    """The text sealed under ``ref`` for ``scope`` (the request's execution) if it still hashes to
    ``digest``; else ``None``.

    Raises ``ReasoningContinuationError`` when the store itself fails (the message names the store
    type and the exception type only).
    """
    if store is None or scope is None or not ref:
        return None
    try:
        body = store.get(ref, tenant=scope.tenant, execution_id=scope.execution_id)
    except Exception as exc:
        raise ReasoningContinuationError(
            f"reasoning store {type(store).__name__} failed while reasoning was being put back into a "
            f"request ({failure_detail(exc, store_location(store))}); nothing was sent, retry the call"
        ) from None
    if body is None or not digest_matches(body, digest, lambda: _digest_key(store, scope)):
        return None
    return text_of(body)
