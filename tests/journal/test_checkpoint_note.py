"""Each checkpoint commits to the origin's Merkle tree: its root, and a C2SP ``tlog-checkpoint`` note
signed as a C2SP signed note (byte for byte the Go reference implementation's signature on its own
published example); the chain's checkpoint fields and their JSON signature stay as they were."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from loom_otel.audit import verify
from loom_otel.core._evidence._journal._checkpoint import (
    CHECKPOINT_HEAD,
    CHECKPOINT_SIGNATURE,
    CHECKPOINT_SIZE,
    Signer,
    generate_key,
    load_public_key,
)
from loom_otel.core._evidence._journal._merkle import MerkleTree, leaf_hash
from loom_otel.core._evidence._journal._note import (
    CHECKPOINT_NOTE,
    CHECKPOINT_ROOT,
    NoteError,
    key_id,
    log_origin,
    note_text,
    open_note,
    parse_note,
    sign_note,
    verify_note,
)
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._evidence._journal._writer import Journal

# golang.org/x/mod/sumdb/note's published example (note_test.go): key, text and signature.
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
GO_SIGNATURE = (
    "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)


def go_keys() -> tuple[Ed25519PrivateKey, bytes]:
    seed = base64.b64decode(GO_SKEY.split("+", 4)[4])[1:]
    public = base64.b64decode(GO_VKEY.split("+", 2)[2])
    assert public[0] == 1
    return Ed25519PrivateKey.from_private_bytes(seed), public[1:]


def test_signed_note_matches_the_go_reference_byte_for_byte() -> None:
    private, public = go_keys()
    assert key_id("PeterNeumann", public).hex() == "c74f20a3"
    note = sign_note(GO_TEXT, private, "PeterNeumann")
    assert note == GO_TEXT + "\n" + GO_SIGNATURE
    assert open_note(note, public, "PeterNeumann") == GO_TEXT
    with pytest.raises(NoteError, match="does not verify"):
        open_note(note.replace("cryptography", "cryptographY"), public, "PeterNeumann")
    with pytest.raises(NoteError, match="no signature by the given key"):
        open_note(note, Ed25519PrivateKey.generate().public_key().public_bytes_raw(), "PeterNeumann")


def test_checkpoint_note_text_and_parsing() -> None:
    root = bytes(range(32))
    text = note_text("host a+b", 7, root)
    assert text == f"loom-otel/host%20a%2Bb\n7\n{base64.b64encode(root).decode()}\n"
    parsed = parse_note(text)
    assert (parsed.origin_line, parsed.size, parsed.root, parsed.signatures) == (log_origin("host a+b"), 7, root, ())
    for bad in (text.replace("\n7\n", "\n07\n"), text[:-1], text.replace("\n7\n", "\n\t7\n"), "a\n1\nAAAA\n"):
        with pytest.raises(NoteError):
            parse_note(bad)


def test_each_checkpoint_carries_the_root_of_the_records_it_covers_and_a_signed_note(tmp_path: Path) -> None:
    generate_key(tmp_path / "key.pem")
    public = bytes.fromhex(load_public_key(tmp_path / "key.pem"))
    j = Journal(
        tmp_path / "j", durability="os", checkpoint_key=tmp_path / "key.pem", checkpoint_every=5, checkpoint_interval=0
    )
    for i in range(13):
        j.append("capture", {"loom.step.id": f"s{i}"})
    j.close()
    records = list(iter_records(tmp_path / "j"))
    tree = MerkleTree([leaf_hash(bytes.fromhex(str(r["hash"]))) for r in records])
    checkpoints = [r for r in records if r["type"] == "checkpoint"]
    assert [str(c["attributes"]).count(CHECKPOINT_SIZE) for c in checkpoints] == [1, 1, 1]
    assert [c["seq"] for c in checkpoints] == [6, 12, 16]
    for checkpoint in checkpoints:
        attributes = checkpoint["attributes"]
        assert isinstance(attributes, dict)
        size = attributes[CHECKPOINT_SIZE]
        assert attributes[CHECKPOINT_ROOT] == tree.root(size).hex()
        note = verify_note(attributes[CHECKPOINT_NOTE], public)
        assert (note.origin_line, note.size, note.root) == (f"loom-otel/{j.origin}", size, tree.root(size))
        assert attributes[CHECKPOINT_HEAD] == records[size - 1]["hash"] and attributes[CHECKPOINT_SIGNATURE]
    report = verify(tmp_path / "j", public_keys=[public.hex()])  # the chain's checks are unchanged
    assert report.ok, report.problems


def test_unsigned_checkpoints_carry_the_note_text_alone(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j", durability="os", checkpoint_key=None, checkpoint_interval=0)
    j.append("capture", {"loom.step.id": "s"})
    j.close()
    (record,) = [r for r in iter_records(tmp_path / "j") if r["type"] == "checkpoint"]
    attributes = record["attributes"]
    assert isinstance(attributes, dict)
    assert attributes[CHECKPOINT_NOTE] == note_text(j.origin, 1, bytes.fromhex(attributes[CHECKPOINT_ROOT]))
    with pytest.raises(NoteError, match="no signature"):
        verify_note(
            attributes[CHECKPOINT_NOTE], Signer(Ed25519PrivateKey.generate()).key.public_key().public_bytes_raw()
        )
