"""A checkpoint's Merkle root as a C2SP ``tlog-checkpoint`` note, signed as a C2SP ``signed-note``.

Each checkpoint record also carries (beside the chain's ``size``/``head`` and its signature over the
canonical JSON, which stay as they were):

- ``loom.audit.checkpoint.root``: hex root of the RFC 6962 tree of the origin's records ``1..size``
  (leaf ``i`` = ``leaf_hash(bytes.fromhex(hash of record i))``, ``_merkle``);
- ``loom.audit.checkpoint.note``: the note. Its text is three lines, each ending in a newline::

      loom-otel/<origin>
      <size>
      <base64 root>

  and, when a key is configured, a blank line and one signature line
  ``— <key name> <base64(key ID || Ed25519 signature of the text)>``, where the key name is the
  origin line and key ID = ``SHA-256(key name || 0x0A || 0x01 || raw public key)[:4]``. Unsigned, the
  attribute holds the text alone.

The origin line is ``loom-otel/`` and the origin with every byte outside ``[A-Za-z0-9._~-]``
percent-encoded (C2SP: no spaces nor ``+`` in an origin or a key name).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import urllib.parse
from dataclasses import dataclass
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "CHECKPOINT_NOTE",
    "CHECKPOINT_ROOT",
    "CheckpointNote",
    "NoteError",
    "key_id",
    "log_origin",
    "note_text",
    "open_note",
    "parse_note",
    "sign_note",
    "tree_attributes",
    "verify_note",
]

CHECKPOINT_ROOT: Final = "loom.audit.checkpoint.root"
CHECKPOINT_NOTE: Final = "loom.audit.checkpoint.note"
ORIGIN_PREFIX: Final = "loom-otel/"
ED25519: Final = b"\x01"
_DASH: Final = "\u2014 "
_MAX_SIGNATURES: Final = 16


class NoteError(ValueError):
    """A note that is malformed, or not signed by the key it is checked against."""


@dataclass(frozen=True, slots=True)
class CheckpointNote:
    """A parsed checkpoint note: its origin line, tree size and root, and its text (what is signed)."""

    origin_line: str
    size: int
    root: bytes
    text: str
    signatures: tuple[tuple[str, bytes, bytes], ...]
    """``(key name, key ID, signature)`` of each signature line."""


def log_origin(origin: str) -> str:
    """The note's origin line (and key name) for a journal origin."""
    return ORIGIN_PREFIX + urllib.parse.quote(origin, safe="-._~")


def note_text(origin: str, size: int, root: bytes) -> str:
    """The ``tlog-checkpoint`` body: origin line, size, base64 root, each ending in a newline."""
    return f"{log_origin(origin)}\n{size}\n{base64.b64encode(root).decode()}\n"


def _raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(name: str, public_raw: bytes) -> bytes:
    """The 4-byte C2SP key ID of an Ed25519 key under ``name``."""
    return hashlib.sha256(name.encode() + b"\n" + ED25519 + public_raw).digest()[:4]


def sign_note(text: str, key: Ed25519PrivateKey, name: str | None = None) -> str:
    """``text`` signed as a C2SP signed note, under ``name`` (default: the text's first line)."""
    name = text.split("\n", 1)[0] if name is None else name
    signature = key_id(name, _raw(key.public_key())) + key.sign(text.encode())
    return f"{text}\n{_DASH}{name} {base64.b64encode(signature).decode()}\n"


def tree_attributes(origin: str, size: int, root: bytes, key: Ed25519PrivateKey | None) -> dict[str, str]:
    """The checkpoint record's tree attributes: the root (hex) and the note (signed when ``key``)."""
    text = note_text(origin, size, root)
    return {CHECKPOINT_ROOT: root.hex(), CHECKPOINT_NOTE: text if key is None else sign_note(text, key)}


def parse_note(note: str, *, checkpoint: bool = True) -> CheckpointNote:
    """A note's fields and signature lines; ``NoteError`` when it is not a checkpoint note (any signed
    note's text and signatures, its fields empty, when not ``checkpoint``)."""
    if any(ord(c) < 0x20 and c != "\n" for c in note) or not note.endswith("\n"):
        raise NoteError("a note is lines ending in a newline, without control characters")
    text, blank, block = note.rpartition("\n\n")
    if not blank:
        text, block = note, ""
    else:
        text += "\n"
    signatures = _signatures(block)
    if not checkpoint:
        return CheckpointNote("", 0, b"", text, signatures)
    lines = text[:-1].split("\n")
    if len(lines) < 3 or not all(lines):
        raise NoteError("a checkpoint note has an origin, a size and a root line")
    origin_line, size_line, root_line = lines[:3]
    if not size_line.isascii() or not size_line.isdigit() or (size_line != "0" and size_line.startswith("0")):
        raise NoteError(f"the size line {size_line!r} is not a decimal number")
    try:
        root = base64.b64decode(root_line, validate=True)
    except (binascii.Error, ValueError):
        raise NoteError("the root line is not base64") from None
    if len(root) != 32:
        raise NoteError("the root is not a SHA-256 hash")
    return CheckpointNote(origin_line, int(size_line), root, text, signatures)


def _signatures(block: str) -> tuple[tuple[str, bytes, bytes], ...]:
    signatures: list[tuple[str, bytes, bytes]] = []
    for line in block.split("\n")[:-1] if block else ():
        name, _, encoded = line.removeprefix(_DASH).rpartition(" ")
        if not line.startswith(_DASH) or not name or " " in name or "+" in name:
            raise NoteError("a signature line is '\u2014 <key name> <base64 signature>'")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise NoteError("a signature is not base64") from None
        if len(raw) < 5:
            raise NoteError("a signature is shorter than its key ID")
        signatures.append((name, raw[:4], raw[4:]))
    if len(signatures) > _MAX_SIGNATURES:
        raise NoteError(f"more than {_MAX_SIGNATURES} signatures")
    return tuple(signatures)


def open_note(note: str, public_raw: bytes, name: str) -> str:
    """The text of a signed note once a signature by ``public_raw`` under ``name`` verifies; ``NoteError``
    otherwise (unsigned, signed by other keys only, or a bad signature by this one). Signatures by other
    keys are ignored (C2SP: a witness may cosign)."""
    parsed = parse_note(note, checkpoint=False)
    wanted = key_id(name, public_raw)
    key = Ed25519PublicKey.from_public_bytes(public_raw)
    found = [sig for n, kid, sig in parsed.signatures if n == name and kid == wanted]
    if not found:
        raise NoteError("the note bears no signature by the given key")
    for signature in found:
        try:
            key.verify(signature, parsed.text.encode())
        except InvalidSignature:
            raise NoteError("the note's signature by the given key does not verify") from None
    return parsed.text


def verify_note(note: str, public_raw: bytes) -> CheckpointNote:
    """The checkpoint note, parsed, once its signature by ``public_raw`` under its origin line verifies."""
    parsed = parse_note(note)
    open_note(note, public_raw, parsed.origin_line)
    return parsed
