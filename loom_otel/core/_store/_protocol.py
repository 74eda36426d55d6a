"""The reasoning store seam: sealed envelopes, the ``ReasoningStore`` protocol, file and memory stores.

A blob is sealed to the (tenant, execution) that captured it: its address is derived from the
envelope, so the same text captured by two executions is two blobs, and ``get`` answers ``None``
alike for "absent", "erased" and "sealed to another execution or tenant". ``exists`` (an audit-only
question, never used to serve text) tells an erased blob from one that is present but does not open.

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

import functools
import hashlib
import hmac
import json
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Protocol, TypeVar, runtime_checkable

from loom_otel.core._canonical import canonical_json, text_bytes
from loom_otel.core._fork import renew_after_fork

__all__ = [
    "DigestKeyStore",
    "Envelope",
    "MemoryReasoningStore",
    "ReasoningStore",
    "digest_matches",
    "keyed_digest",
    "scope_of",
]

_MAGIC: Final = b"LOOMR1\n"
_REF: Final = re.compile(r"^[0-9a-f]{32}/[0-9a-f]{64}$")
DIGEST_KEY_NAME: Final = ".digest-key"
DIGEST_KEY_BYTES: Final = 32


def keyed_digest(body: bytes, key: bytes | None) -> str:
    """The digest a record carries: SHA-256 of ``body``, or HMAC-SHA256 under the execution's key."""
    if key is None:
        return hashlib.sha256(body).hexdigest()
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def digest_matches(body: bytes, digest: str, key: Callable[[], bytes | None]) -> bool:
    """Whether ``body`` is the text ``digest`` was recorded for: plain SHA-256, else HMAC-SHA256 under the
    execution's key (``key`` is called only when the plain digest does not match)."""
    if keyed_digest(body, None) == digest:
        return True
    secret = key()
    return secret is not None and keyed_digest(body, secret) == digest


_T = TypeVar("_T")


def _per_execution(compute: Callable[[str | None, str], _T]) -> Callable[[str | None, str], _T]:
    """``compute(tenant, execution_id)``, cached for the newest 4096 executions; without a tenant by the
    id alone (a key tuple kept for each new execution would be one more object for the garbage collector
    to count on the call that adds it)."""
    tenanted = functools.lru_cache(maxsize=4096)(compute)
    untenanted = functools.lru_cache(maxsize=4096)(functools.partial(compute, None))

    @functools.wraps(compute)
    def cached(tenant: str | None, execution_id: str) -> _T:
        return untenanted(execution_id) if tenant is None else tenanted(tenant, execution_id)

    return cached


@_per_execution
def scope_of(tenant: str | None, execution_id: str) -> str:
    """The directory-safe name of one (tenant, execution) scope; erasure removes exactly this scope."""
    if tenant is None and execution_id.isalnum() and execution_id.isascii():  # a new conversation's hex id
        named = b'["loom-otel/scope/v1",null,"%s"]' % execution_id.encode()  # canonical_json, built directly
    else:
        named = canonical_json(["loom-otel/scope/v1", tenant, execution_id])
    return hashlib.sha256(named).hexdigest()[:32]


@_per_execution
def _header_tail(tenant: str | None, execution_id: str) -> bytes:
    """The part of a blob's seal after its digest (the same for every blob of an execution)."""
    return canonical_json({"execution_id": execution_id, "tenant": tenant})[1:] + b"\n"


@dataclass(frozen=True, slots=True)
class Envelope:
    """Readable text sealed to the execution (and tenant) that captured it.

    Built with ``Envelope.seal``: the body is encoded once (``text_bytes``: UTF-8, a lone surrogate
    kept), and the digest and the store address are computed from it without another copy.
    """

    tenant: str | None
    execution_id: str
    digest: str
    ref: str
    body: bytes = field(repr=False)
    named: bool = field(default=True, compare=False)
    """Whether the application named the execution (``execution()``): a rerun may capture the same text
    into it again, so a store keeps its blobs where a rerun finds them (``put`` stores nothing new).
    ``False`` for an execution loom-otel named itself (a new trace id, which no rerun captures into): a
    store may keep those blobs in places shared by many executions and skip looking for an earlier copy
    written by another process (only a copy it wrote itself is not stored again)."""

    @classmethod
    def seal(
        cls, text: str, *, execution_id: str, tenant: str | None = None, key: bytes | None = None, named: bool = True
    ) -> Envelope:
        """``key``: the execution's digest key (``hmac-sha256`` mode); digest and address are keyed by it.
        ``named``: see the field."""
        body = text_bytes(text)
        digest = keyed_digest(body, key)
        scope = scope_of(tenant, execution_id)
        # canonical_json(["loom-otel/blob/v1", scope, digest]): both are hex, so the bytes are built directly
        address = hashlib.sha256(b'["loom-otel/blob/v1","%s","%s"]' % (scope.encode(), digest.encode())).hexdigest()
        return cls(tenant, execution_id, digest, f"{scope}/{address}", body, named)

    @property
    def size(self) -> int:
        return len(self.body)

    def header(self) -> bytes:
        """The seal written in front of the body: who the blob belongs to and what it must hash to
        (``canonical_json({"digest", "execution_id", "tenant"})``; the digest is hex, so it is spliced in)."""
        return b'{"digest":"' + self.digest.encode() + b'",' + _header_tail(self.tenant, self.execution_id)


def _opens(ref: str, tenant: str | None, execution_id: str) -> bool:
    """A ref opens only for the scope it was sealed to (checked before any read)."""
    return _REF.match(ref) is not None and ref.startswith(scope_of(tenant, execution_id) + "/")


def _unseal(blob: bytes, tenant: str | None, execution_id: str) -> bytes | None:
    if not blob.startswith(_MAGIC):
        return None
    end = blob.find(b"\n", len(_MAGIC))
    if end < 0:
        return None
    expected = canonical_json({"tenant": tenant, "execution_id": execution_id})
    try:
        header = json.loads(blob[len(_MAGIC) : end])
    except ValueError:
        return None
    if canonical_json({"tenant": header.get("tenant"), "execution_id": header.get("execution_id")}) != expected:
        return None
    return blob[end + 1 :]


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
        self._blobs: dict[str, tuple[str | None, str, bytes]] = {}
        self._keys: dict[str, bytes] = {}
        self._lock = threading.Lock()
        renew_after_fork(self)

    def put(self, envelope: Envelope) -> str:
        with self._lock:
            self._blobs.setdefault(envelope.ref, (envelope.tenant, envelope.execution_id, envelope.body))
        return envelope.ref

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        if not _opens(ref, tenant, execution_id):
            return None
        with self._lock:
            entry = self._blobs.get(ref)
        if entry is None or entry[0] != tenant or entry[1] != execution_id:
            return None
        return entry[2]

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
