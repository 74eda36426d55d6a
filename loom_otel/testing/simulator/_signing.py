"""HMAC signatures bound to a canonical JSON "binding", the simulator's stand-in for vendor signatures.

A token is ``base64(magic || model_tag || mac)``. ``mac`` is HMAC-SHA256 over the domain, the canonical
JSON of the binding and the payload (the thinking text as returned). ``model_tag`` is a short digest of
the model the binding names (zeros when the vendor does not bind to a model), kept in clear so that a
failed check can tell a model switch from an edited prefix.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from typing import Final, Literal

Verdict = Literal["ok", "model_mismatch", "prefix_mismatch", "malformed"]

_TAG_SIZE: Final = 8
_MAC_SIZE: Final = 32
_NO_MODEL: Final = bytes(_TAG_SIZE)


def utf8(text: str) -> bytes:
    """UTF-8, a lone surrogate (a ``\\udXXX`` escape in a request's JSON) kept as its 3-byte form."""
    return text.encode("utf-8", "surrogatepass")


def canonical_json(value: object) -> bytes:
    """Sorted-key, whitespace-free UTF-8 JSON: equal values give equal bytes."""
    return utf8(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def decode_b64(token: str) -> bytes | None:
    """Decode standard or URL-safe base64, padded or not; ``None`` if it is not base64."""
    text = token.strip().replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def _model_tag(model: str | None) -> bytes:
    if model is None:
        return _NO_MODEL
    return hashlib.sha256(model.encode()).digest()[:_TAG_SIZE]


class Signer:
    """Makes and checks tokens for one secret; ``domain`` separates vendors and block kinds."""

    __slots__ = ("_secret",)

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _mac(self, domain: str, binding: object, payload: str) -> bytes:
        message = domain.encode() + b"\x00" + canonical_json(binding) + b"\x00" + utf8(payload)
        return hmac.new(self._secret, message, hashlib.sha256).digest()

    def token(self, magic: bytes, domain: str, binding: object, *, payload: str = "", model: str | None = None) -> str:
        raw = magic + _model_tag(model) + self._mac(domain, binding, payload)
        return base64.b64encode(raw).decode()

    def opaque(self, magic: bytes, domain: str, binding: object, *, model: str | None = None) -> str:
        """A longer token (``redacted_thinking.data``, ``encrypted_content``) that looks like ciphertext."""
        raw = magic + _model_tag(model) + self._mac(domain, binding, "")
        filler = hashlib.sha512(raw).digest()
        return base64.b64encode(raw + filler).decode()

    def check(
        self,
        magic: bytes,
        domain: str,
        token: str,
        binding: object,
        *,
        payload: str = "",
        model: str | None = None,
    ) -> Verdict:
        raw = decode_b64(token) if isinstance(token, str) else None
        head = len(magic) + _TAG_SIZE
        if raw is None or len(raw) < head + _MAC_SIZE or not raw.startswith(magic):
            return "malformed"
        mac = raw[head : head + _MAC_SIZE]
        if hmac.compare_digest(mac, self._mac(domain, binding, payload)):
            return "ok"
        if raw[len(magic) : head] != _model_tag(model):
            return "model_mismatch"
        return "prefix_mismatch"
