"""Canonical JSON and the digests built on it: one place for how loom-otel hashes anything."""

from __future__ import annotations

import hashlib
import json
import json.encoder
from collections.abc import Callable, Sequence
from typing import Final

__all__ = ["GENESIS", "canonical_json", "chain_hash", "sha256_hex", "text_bytes", "text_digest", "text_of"]

GENESIS: Final = "0" * 64
"""The ``prev`` of the first record of a chain."""


_ENCODER: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_ENCODE: Final = _ENCODER.encode
"""Built once: ``json.dumps`` with these options would build a new encoder on every call."""
_MAKE_C_ENCODER: Final[Callable[..., Callable[[object, int], Sequence[str]]] | None] = getattr(
    json.encoder, "c_make_encoder", None
)
_C_ENCODE: Final = (
    None
    if _MAKE_C_ENCODER is None
    else _MAKE_C_ENCODER(None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", True, False, True)
)
"""``_ENCODER``'s C encoder, built once too (``encode`` builds a new one on every call), without its
circular-reference markers: a value nested too deep or circular is encoded again by ``_ENCODE``, which
raises the encoder's own error."""


def text_bytes(text: str) -> bytes:
    """The UTF-8 bytes of ``text`` as loom-otel seals, digests and sizes it, everywhere.

    A lone surrogate (half of a UTF-16 pair: a vendor's JSON may carry a ``\\udXXX`` escape that
    Python decodes into one) has no UTF-8 form; it is kept as its three-byte encoding
    (``surrogatepass``), so such a text is stored and digested losslessly and ``text_of`` gives it
    back equal. Every other text encodes exactly as ``str.encode()`` does.
    """
    return text.encode("utf-8", "surrogatepass")


def text_of(body: bytes) -> str:
    """The text ``text_bytes`` encoded (lone surrogates back as they were); bytes that are not such
    an encoding decode with U+FFFD in place of what cannot be read."""
    try:
        return body.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return body.decode("utf-8", "replace")


def canonical_json(value: object) -> bytes:
    """Sorted keys, no insignificant white space, UTF-8 (tuples as arrays): equal values give equal bytes.
    Strings are encoded by ``text_bytes`` (a lone surrogate is kept; ``json.loads`` reads it back)."""
    if _C_ENCODE is not None:
        try:
            return text_bytes("".join(_C_ENCODE(value, 0)))
        except RecursionError:
            pass
    return text_bytes(_ENCODE(value))


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def text_digest(text: str) -> str:
    """SHA-256 hex of the text's ``text_bytes``: the digest events and records carry."""
    return hashlib.sha256(text_bytes(text)).hexdigest()


def chain_hash(prev: str, body: bytes) -> str:
    """``SHA-256(prev_hash || canonical(record))``, the link of the audit chain."""
    h = hashlib.sha256(bytes.fromhex(prev))
    h.update(body)
    return h.hexdigest()
