"""Consistency between two checkpoints of one origin: the origin's log only grew (RFC 6962 2.1.2).

A witness keeps a checkpoint note it was shown (from a bundle, or a checkpoint record's
``loom.audit.checkpoint.note``). Later, ``consistency_document`` (``loom-otel audit consistency``) gives
the two notes of an origin and the proof between them, read from the journal; ``check_consistency``
(``loom-otel verify --consistency OLD NEW``) needs only the two notes, the proof and the key: both notes
signed by it, of one origin, and the proof leading from the old root to the new one.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from loom_otel.core.journal import (
    CHECKPOINT_NOTE,
    MerkleTree,
    NoteError,
    ProofError,
    leaf_hash,
    parse_note,
    read_lines,
    verify_consistency,
    verify_note,
)
from loom_otel.core.journal import attributes as attr

__all__ = ["CONSISTENCY_FORMAT", "ConsistencyError", "check_consistency", "consistency_document"]

CONSISTENCY_FORMAT: Final = "loom-otel/consistency-proof"


class ConsistencyError(ValueError):
    """No such checkpoints in the journal, or notes and proof that do not show the log only grew."""


def consistency_document(
    journal: str | os.PathLike[str], origin: str, old: int, new: int | None = None
) -> dict[str, object]:
    """The notes of ``origin``'s checkpoints of ``old`` and ``new`` records (default: its last) and the
    consistency proof between them (base64 hashes, as the notes write roots)."""
    leaves: list[bytes] = []
    notes: dict[int, str] = {}
    for line in read_lines(Path(journal) / origin):
        if line.torn or line.too_long:
            break
        record = json.loads(line.data)
        leaves.append(leaf_hash(bytes.fromhex(str(record["hash"]))))
        attributes = record.get("attributes")
        if record.get("type") == attr.RECORD_CHECKPOINT and isinstance(attributes, dict):
            note = attributes.get(CHECKPOINT_NOTE)
            if isinstance(note, str):
                notes[parse_note(note).size] = note
    if not notes:
        raise ConsistencyError(f"origin {origin!r} has no checkpoint with a tree note in {str(journal)!r}")
    new = max(notes) if new is None else new
    for size in (old, new):
        if size not in notes:
            sizes = ", ".join(str(s) for s in sorted(notes))
            raise ConsistencyError(f"origin {origin!r} has no checkpoint of {size} records (it has: {sizes})")
    if old > new:
        raise ConsistencyError(f"the old checkpoint ({old}) is larger than the new one ({new})")
    proof = MerkleTree(leaves[:new]).consistency_proof(old)
    return {
        "format": CONSISTENCY_FORMAT,
        "version": 1,
        "origin": origin,
        "old": notes[old],
        "new": notes[new],
        "proof": [base64.b64encode(h).decode() for h in proof],
    }


def check_consistency(old_note: str, new_note: str, proof: Sequence[str], public_raw: bytes) -> tuple[int, int]:
    """``(old size, new size)`` once both notes are signed by the key, of one origin, and ``proof``
    (base64 hashes) shows the old tree is a prefix of the new one; ``ConsistencyError`` naming what fails."""
    try:
        old = verify_note(old_note, public_raw)
    except NoteError as exc:
        raise ConsistencyError(f"the old checkpoint: {exc}") from None
    try:
        new = verify_note(new_note, public_raw)
    except NoteError as exc:
        raise ConsistencyError(f"the new checkpoint: {exc}") from None
    if old.origin_line != new.origin_line:
        raise ConsistencyError(f"the checkpoints are of two logs ({old.origin_line}, {new.origin_line})")
    try:
        hashes = [base64.b64decode(h, validate=True) for h in proof]
    except (binascii.Error, ValueError, TypeError):
        raise ConsistencyError("the proof is not a list of base64 hashes") from None
    try:
        verify_consistency(old.size, new.size, old.root, new.root, hashes)
    except ProofError as exc:
        raise ConsistencyError(f"the log did not only grow from {old.size} to {new.size} records: {exc}") from None
    return old.size, new.size
