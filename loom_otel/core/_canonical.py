"""Canonical JSON and the digests built on it: one place for how loom-otel hashes anything."""

from __future__ import annotations

import hashlib
import json
from typing import Final

__all__ = ["GENESIS", "canonical_json", "chain_hash", "sha256_hex", "text_digest"]

GENESIS: Final = "0" * 64
"""The ``prev`` of the first record of a chain."""


_ENCODE: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
"""Built once: ``json.dumps`` with these options would build a new encoder on every call."""


def canonical_json(value: object) -> bytes:
    """Sorted keys, no insignificant white space, UTF-8 (tuples as arrays): equal values give equal bytes."""
    return _ENCODE(value).encode()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def text_digest(text: str) -> str:
    """SHA-256 hex of the UTF-8 text: the digest events and records carry."""
    return hashlib.sha256(text.encode()).hexdigest()


def chain_hash(prev: str, body: bytes) -> str:
    """``SHA-256(prev_hash || canonical(record))``, the link of the audit chain."""
    h = hashlib.sha256(bytes.fromhex(prev))
    h.update(body)
    return h.hexdigest()
