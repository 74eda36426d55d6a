"""The reasoning store seam: the ``ReasoningStore`` protocol, the envelopes it takes (``_sealed``: the blob
format, re-exported here), the memory store.

A blob is sealed to the (tenant, execution) that captured it: its address is derived from the
envelope, so the same text captured by two executions is two blobs, and ``get`` answers ``None``
alike for "absent", "erased" and "sealed to another execution or tenant". ``exists`` (an audit-only
question, never used to serve text) tells an erased blob from one that is present but does not open.
``unsealed`` (``AudienceStore``: every built-in store) answers the same, with the audience sealed with the
text (principal and owner): the reading rule runs on that, never on a record naming the blob. A reader
given a store without it takes every blob as sealed with no audience (its tenant's auditors only).

Digests (``LOOM_OTEL_DIGEST``). The default, ``sha256``, is the plain SHA-256 of the UTF-8 text: anyone
holding a record can check a guessed text against it, forever, even after the blob is erased (a
short or predictable text, such as a yes/no decision or an account number, can be confirmed by
guessing). ``hmac-sha256`` keys the digest, and the blob address derived from it, with a random
per-execution key kept beside the blobs in the execution's scope (``<scope>/.digest-key``) and
destroyed by ``erase_execution``: after erasure no kept digest or ref can confirm a guess. The cost:
digests are no longer comparable across executions or with an outside SHA-256, checking one needs
the store (and the key), and losing the key alone turns every intact blob of that execution into a
``digest-mismatch``. The size stays in the record either way.
"""

from __future__ import annotations

import os
import threading
from typing import Final, Protocol, runtime_checkable

from loom_otel.core._evidence._store._sealed import Envelope, Unsealed, digest_matches, keyed_digest, opens, scope_of
from loom_otel.core._runtime._fork import renew_after_fork

__all__ = [
    "AudienceStore",
    "DigestKeyStore",
    "Envelope",
    "MemoryReasoningStore",
    "ReasoningStore",
    "Unsealed",
    "digest_matches",
    "keyed_digest",
    "open_sealed",
    "scope_of",
]

DIGEST_KEY_NAME: Final = ".digest-key"
DIGEST_KEY_BYTES: Final = 32


@runtime_checkable
class ReasoningStore(Protocol):
    """Where readable reasoning lives, sealed. Implementations must make ``put`` idempotent."""

    def put(self, envelope: Envelope) -> str:
        """Keep the sealed text; return its ref (the same ref for the same envelope, storing nothing new)."""
        ...

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        """The UTF-8 text, or ``None`` when absent, erased, or sealed to another execution or tenant."""
        ...

    def delete(self, ref: str) -> None:
        """Remove one blob; removing an absent one is not an error."""
        ...

    def erase_execution(self, tenant: str | None, execution_id: str) -> int:
        """Remove every blob of one execution; return how many were removed."""
        ...


@runtime_checkable
class AudienceStore(Protocol):
    """A store that hands a blob back with the audience sealed with it (all built-in ones)."""

    def unsealed(self, ref: str, *, tenant: str | None, execution_id: str) -> Unsealed | None:
        """The text and its sealed audience; ``None`` exactly when ``get`` answers ``None``."""
        ...


def open_sealed(store: ReasoningStore, ref: str, *, tenant: str | None, execution_id: str) -> Unsealed | None:
    """``ref``'s text with its sealed audience from any store: ``unsealed`` where the store can tell the
    audience, else the text with none (its tenant's auditors only); ``None`` when ``get`` answers ``None``."""
    unsealed = getattr(store, "unsealed", None)  # ``AudienceStore``, without a runtime protocol check per read
    if callable(unsealed):
        opened: Unsealed | None = unsealed(ref, tenant=tenant, execution_id=execution_id)
        return opened
    body = store.get(ref, tenant=tenant, execution_id=execution_id)
    return None if body is None else Unsealed(body, None, None)


@runtime_checkable
class DigestKeyStore(Protocol):
    """A store that can also keep per-execution digest keys and answer ``exists`` (all built-in ones)."""

    def exists(self, ref: str) -> bool:
        """Whether a blob is stored at ``ref`` at all, sealed to anyone (audit use only; never serves text)."""
        ...

    def digest_key(self, tenant: str | None, execution_id: str, *, create: bool = False) -> bytes | None:
        """The execution's ``hmac-sha256`` key (made once when ``create``); ``None`` when absent or erased."""
        ...


class MemoryReasoningStore:
    """A process-local store (``memory:``), for tests and throw-away runs."""

    def __init__(self) -> None:
        self._blobs: dict[str, Envelope] = {}
        self._keys: dict[str, bytes] = {}
        self._lock = threading.Lock()
        renew_after_fork(self)

    def put(self, envelope: Envelope) -> str:
        with self._lock:
            self._blobs.setdefault(envelope.ref, envelope)
        return envelope.ref

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        opened = self.unsealed(ref, tenant=tenant, execution_id=execution_id)
        return None if opened is None else opened.body

    def unsealed(self, ref: str, *, tenant: str | None, execution_id: str) -> Unsealed | None:
        if not opens(ref, tenant, execution_id):
            return None
        with self._lock:
            entry = self._blobs.get(ref)
        if entry is None or entry.tenant != tenant or entry.execution_id != execution_id:
            return None
        return Unsealed(entry.body, entry.principal, entry.owner)

    def delete(self, ref: str) -> None:
        with self._lock:
            self._blobs.pop(ref, None)

    def exists(self, ref: str) -> bool:
        with self._lock:
            return ref in self._blobs

    def digest_key(self, tenant: str | None, execution_id: str, *, create: bool = False) -> bytes | None:
        scope = scope_of(tenant, execution_id)
        with self._lock:
            if create:
                return self._keys.setdefault(scope, os.urandom(DIGEST_KEY_BYTES))
            return self._keys.get(scope)

    def erase_execution(self, tenant: str | None, execution_id: str) -> int:
        prefix = scope_of(tenant, execution_id) + "/"
        with self._lock:
            doomed = [ref for ref in self._blobs if ref.startswith(prefix)]
            for ref in doomed:
                del self._blobs[ref]
            self._keys.pop(prefix[:-1], None)
        return len(doomed)

    def __len__(self) -> int:
        return len(self._blobs)

    def __repr__(self) -> str:
        return f"MemoryReasoningStore(blobs={len(self._blobs)})"
