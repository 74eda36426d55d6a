"""The sealed-blob format: what a store writes for one readable text, and how it opens.

A blob is ``MAGIC`` (``LOOMR1``), one header line (``canonical_json({"digest", "execution_id", "owner",
"principal", "tenant"})``, ``owner`` and ``principal`` only when known) and the text's bytes. The header is
the blob's audience (DESIGN "Who may read"): who may read it is decided from it, never from a record that
names the blob. A blob sealed before the audience was (no ``principal`` in its header) opens with none: its
tenant's auditors only. Its address (``REF``) is derived from the (tenant, execution) scope, the digest and
the audience, so the same text captured by two executions, or for two principals, is two blobs; ``opens``
checks a ref against a scope before any read and ``unseal`` / ``unseal_audience`` check the header before
handing the body back. ``Envelope.seal`` builds one; every store writes ``Envelope.sealed()`` and reads
through ``unseal_audience``.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeVar

from loom_otel.core._evidence._canonical import canonical_json, text_bytes

__all__ = [
    "MAGIC",
    "REF",
    "Envelope",
    "Unsealed",
    "digest_matches",
    "keyed_digest",
    "opens",
    "scope_of",
    "unseal",
    "unseal_audience",
]

MAGIC: Final = b"LOOMR1\n"
"""What every sealed blob starts with, before its header line."""
REF: Final = re.compile(r"^[0-9a-f]{32}/[0-9a-f]{64}$")
"""A blob's address: its scope (``scope_of``), a slash, the SHA-256 of scope and digest."""


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


@functools.lru_cache(maxsize=4096)
def _audience_tail(tenant: str | None, execution_id: str, principal: str | None, owner: str | None) -> bytes:
    """``_header_tail`` of a blob sealed with an audience (the principal and owner it names)."""
    header: dict[str, str | None] = {"execution_id": execution_id, "tenant": tenant}
    if owner is not None:
        header["owner"] = owner
    if principal is not None:
        header["principal"] = principal
    return canonical_json(header)[1:] + b"\n"


def _address(scope: str, digest: str, principal: str | None, owner: str | None) -> str:
    """The blob's name in its scope: SHA-256 of scope and digest, and of the audience when it names one."""
    if principal is None and owner is None:
        # canonical_json(["loom-otel/blob/v1", scope, digest]): both are hex, so the bytes are built directly
        return hashlib.sha256(b'["loom-otel/blob/v1","%s","%s"]' % (scope.encode(), digest.encode())).hexdigest()
    return hashlib.sha256(canonical_json(["loom-otel/blob/v2", scope, digest, principal, owner])).hexdigest()


@dataclass(frozen=True, slots=True)
class Envelope:
    """Readable text sealed to the execution (and tenant) that captured it, and to its audience: the
    call's principal and owner (DESIGN "Who may read"), which decide who may read it back.

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
    principal: str | None = None
    """Whose call captured the text (``execution(principal=...)``, or the baggage principal)."""
    owner: str | None = None
    """Who owns the execution (``execution(owner=...)``)."""

    @classmethod
    def seal(
        cls,
        text: str,
        *,
        execution_id: str,
        tenant: str | None = None,
        key: bytes | None = None,
        named: bool = True,
        principal: str | None = None,
        owner: str | None = None,
    ) -> Envelope:
        """``key``: the execution's digest key (``hmac-sha256`` mode); digest and address are keyed by it.
        ``named``: see the field. ``principal``, ``owner``: the audience sealed with the text (empty: none)."""
        body = text_bytes(text)
        digest = keyed_digest(body, key)
        scope = scope_of(tenant, execution_id)
        principal, owner = principal or None, owner or None
        address = _address(scope, digest, principal, owner)
        return cls(tenant, execution_id, digest, f"{scope}/{address}", body, named, principal, owner)

    @property
    def size(self) -> int:
        return len(self.body)

    def header(self) -> bytes:
        """The seal written in front of the body: who the blob belongs to and what it must hash to
        (``canonical_json({"digest", "execution_id", "owner", "principal", "tenant"})``, the audience only
        when known; the digest is hex, so it is spliced in)."""
        if self.principal is None and self.owner is None:
            tail = _header_tail(self.tenant, self.execution_id)
        else:
            tail = _audience_tail(self.tenant, self.execution_id, self.principal, self.owner)
        return b'{"digest":"' + self.digest.encode() + b'",' + tail

    def sealed(self) -> tuple[bytes, bytes, bytes]:
        """The blob a store writes, in three pieces: ``MAGIC``, the ``header`` line, the body."""
        return MAGIC, self.header(), self.body


def opens(ref: str, tenant: str | None, execution_id: str) -> bool:
    """A ref opens only for the scope it was sealed to (checked before any read)."""
    return REF.match(ref) is not None and ref.startswith(scope_of(tenant, execution_id) + "/")


@dataclass(frozen=True, slots=True)
class Unsealed:
    """A blob opened for its (tenant, execution): its text and the audience sealed with it (``None``: the
    blob names none, as every blob sealed before the audience was)."""

    body: bytes = field(repr=False)
    principal: str | None
    owner: str | None


def _name(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def unseal_audience(blob: bytes, tenant: str | None, execution_id: str) -> Unsealed | None:
    """``blob`` opened if it is sealed to (``tenant``, ``execution_id``), with its audience; ``None``
    otherwise (not a sealed blob, a damaged seal, another scope)."""
    if not blob.startswith(MAGIC):
        return None
    end = blob.find(b"\n", len(MAGIC))
    if end < 0:
        return None
    try:
        header = json.loads(blob[len(MAGIC) : end])
    except ValueError:
        return None
    if not isinstance(header, dict):
        return None
    sealed_tenant, sealed_execution = header.get("tenant"), header.get("execution_id")
    if not (isinstance(sealed_execution, str) and sealed_execution == execution_id):
        return None
    if not (sealed_tenant is None if tenant is None else isinstance(sealed_tenant, str) and sealed_tenant == tenant):
        return None
    return Unsealed(blob[end + 1 :], _name(header.get("principal")), _name(header.get("owner")))


def unseal(blob: bytes, tenant: str | None, execution_id: str) -> bytes | None:
    """The body of ``blob`` if it is sealed to (``tenant``, ``execution_id``); ``None`` otherwise."""
    opened = unseal_audience(blob, tenant, execution_id)
    return None if opened is None else opened.body
