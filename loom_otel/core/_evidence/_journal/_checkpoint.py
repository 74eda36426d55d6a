"""Journal checkpoints: ``{origin, size, head, time}``, Ed25519-signed when a key is configured.

A checkpoint is a journal record of type ``checkpoint`` whose attributes are:

- ``loom.audit.checkpoint.size``: how many records of the chain it covers (``seq`` 1..size);
- ``loom.audit.checkpoint.head``: the hash of record ``size``;
- ``loom.audit.checkpoint.signature``: hex Ed25519 signature of the canonical JSON of
  ``{"origin", "size", "head", "time"}`` (``time`` = the checkpoint record's time), ``""`` if unsigned;
- ``loom.audit.checkpoint.key``: hex raw Ed25519 public key that signed it, ``""`` if unsigned.

Records after the last checkpoint of a chain verify as "unanchored", never as "ok". A verifier that
is given the trusted public keys also rejects checkpoints signed by any other key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from loom_otel.core._evidence._canonical import canonical_json

__all__ = [
    "CHECKPOINT_HEAD",
    "CHECKPOINT_KEY",
    "CHECKPOINT_SIGNATURE",
    "CHECKPOINT_SIZE",
    "Signer",
    "checkpoint_attributes",
    "checkpoint_payload",
    "generate_key",
    "load_public_key",
    "public_key_hex",
    "verify_signature",
]

CHECKPOINT_SIZE: Final = "loom.audit.checkpoint.size"
CHECKPOINT_HEAD: Final = "loom.audit.checkpoint.head"
CHECKPOINT_SIGNATURE: Final = "loom.audit.checkpoint.signature"
CHECKPOINT_KEY: Final = "loom.audit.checkpoint.key"


def checkpoint_payload(origin: str, size: int, head: str, time_ns: int) -> bytes:
    """The bytes a checkpoint signature covers."""
    return canonical_json({"origin": origin, "size": size, "head": head, "time": time_ns})


@dataclass(frozen=True, slots=True)
class Signer:
    """An Ed25519 private key loaded from a PEM file (``loom-otel keygen``)."""

    key: Ed25519PrivateKey

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Signer:
        """Load a PEM (PKCS#8, unencrypted) Ed25519 private key; ``ValueError`` if it is not one."""
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError("checkpoint key is not an Ed25519 private key")
        return cls(key)

    @property
    def public_hex(self) -> str:
        return public_key_hex(self.key.public_key())

    def sign(self, payload: bytes) -> str:
        return self.key.sign(payload).hex()


def checkpoint_attributes(
    origin: str, size: int, head: str, time_ns: int, signer: Signer | None
) -> dict[str, str | int]:
    """The attributes of the checkpoint record covering ``size`` records ending in ``head``."""
    signature = signer.sign(checkpoint_payload(origin, size, head, time_ns)) if signer is not None else ""
    return {
        CHECKPOINT_SIZE: size,
        CHECKPOINT_HEAD: head,
        CHECKPOINT_SIGNATURE: signature,
        CHECKPOINT_KEY: signer.public_hex if signer is not None else "",
    }


def public_key_hex(key: Ed25519PublicKey) -> str:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


def load_public_key(path: str | os.PathLike[str]) -> str:
    """Hex raw public key from a PEM public key file, or from a private key file (its public half)."""
    data = Path(path).read_bytes()
    if b"PRIVATE KEY" in data:
        return Signer.from_file(path).public_hex
    key = serialization.load_pem_public_key(data)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("not an Ed25519 public key")
    return public_key_hex(key)


def verify_signature(public_hex: str, signature_hex: str, payload: bytes) -> bool:
    """``True`` iff ``signature_hex`` is a valid Ed25519 signature of ``payload`` by ``public_hex``."""
    try:
        key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_hex))
        key.verify(bytes.fromhex(signature_hex), payload)
    except (InvalidSignature, ValueError):
        return False
    return True


def generate_key(path: str | os.PathLike[str]) -> str:
    """Write a new Ed25519 private key to ``path`` (PEM, mode 0600, never overwriting); return the
    public key as PEM."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, pem)
        os.fsync(fd)
    finally:
        os.close(fd)
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return public.decode()
