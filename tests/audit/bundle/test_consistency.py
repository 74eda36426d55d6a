"""``loom-otel audit consistency`` and ``loom-otel verify --consistency OLD NEW``: a witness that kept an
older checkpoint note of an origin checks that the log only grew; a rewritten log, swapped notes, a
tampered proof or notes of two logs are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from loom_otel.core._evidence._journal._checkpoint import Signer, generate_key
from loom_otel.core._evidence._journal._note import note_text, parse_note, sign_note
from loom_otel.core._evidence._journal._writer import Journal
from tests.audit.bundle.conftest import run_cli


@pytest.fixture
def log(tmp_path: Path) -> tuple[Path, str, Path, Path]:
    """A journal of 25 records with checkpoints at 5, 11, 17, 23 and 27 (close)."""
    key = tmp_path / "key.pem"
    (tmp_path / "key.pub").write_text(generate_key(key))
    journal = Journal(tmp_path / "j", durability="os", checkpoint_key=key, checkpoint_every=5, checkpoint_interval=0)
    for i in range(23):
        journal.append("capture", {"loom.step.id": f"s{i}"})
    journal.close()
    return tmp_path / "j", journal.origin, key, tmp_path / "key.pub"


def consistency(journal: Path, origin: str, old: int, new: int | None, out: Path) -> dict[str, object]:
    argv = ["audit", "consistency", "--journal", str(journal), "--origin", origin, "--old", str(old)]
    argv += [] if new is None else ["--new", str(new)]
    code, _, err = run_cli(*argv, "--out", str(out))
    assert code == 0, err
    document = json.loads(out.read_text())
    assert isinstance(document, dict)
    return document


def check(old: Path, new: Path, proof: Path, key: Path) -> tuple[int, str]:
    code, out, _ = run_cli("verify", "--consistency", str(old), str(new), "--proof", str(proof), "--key", str(key))
    return code, out


def test_a_witness_checks_that_the_log_only_grew(log: tuple[Path, str, Path, Path], tmp_path: Path) -> None:
    journal, origin, _, public = log
    document = consistency(journal, origin, 5, None, tmp_path / "proof.json")
    assert parse_note(str(document["new"])).size == 27
    (tmp_path / "old.note").write_text(str(document["old"]))  # what the witness kept earlier
    (tmp_path / "new.note").write_text(str(document["new"]))
    code, out = check(tmp_path / "old.note", tmp_path / "new.note", tmp_path / "proof.json", public)
    assert code == 0 and "grew from 5 to 27 records" in out
    for old, new in ((11, 17), (17, 23), (23, 27)):
        document = consistency(journal, origin, old, new, tmp_path / "p.json")
        (tmp_path / "o.note").write_text(str(document["old"]))
        (tmp_path / "n.note").write_text(str(document["new"]))
        assert check(tmp_path / "o.note", tmp_path / "n.note", tmp_path / "p.json", public)[0] == 0


def test_a_rewritten_log_swapped_notes_or_a_tampered_proof_fail(
    log: tuple[Path, str, Path, Path], tmp_path: Path
) -> None:
    journal, origin, key, public = log
    document = consistency(journal, origin, 11, 23, tmp_path / "proof.json")
    old, new = tmp_path / "old.note", tmp_path / "new.note"
    old.write_text(str(document["old"]))
    new.write_text(str(document["new"]))
    code, out = check(new, old, tmp_path / "proof.json", public)
    assert code == 1 and "did not only grow from 23 to 11" in out
    # the same origin and key, another history: a log rewritten after the witness kept its checkpoint
    forged = tmp_path / "forged.note"
    forged.write_text(sign_note(note_text(origin, 11, bytes(32)), Signer.from_file(key).key))
    code, out = check(forged, new, tmp_path / "proof.json", public)
    assert code == 1 and "FAILED: the log did not only grow from 11 to 23 records" in out
    proof = json.loads((tmp_path / "proof.json").read_text())
    proof["proof"][0] = proof["proof"][-1]
    (tmp_path / "bad.json").write_text(json.dumps(proof))
    assert check(old, new, tmp_path / "bad.json", public)[0] == 1
    stranger = tmp_path / "stranger.note"
    stranger.write_text(sign_note(note_text("another-origin", 11, bytes(32)), Signer.from_file(key).key))
    code, out = check(stranger, new, tmp_path / "proof.json", public)
    assert code == 1 and "two logs" in out
    unsigned = tmp_path / "unsigned.note"
    unsigned.write_text(sign_note(str(document["old"]).split("\n\n")[0] + "\n", Ed25519PrivateKey.generate()))
    code, out = check(unsigned, new, tmp_path / "proof.json", public)
    assert code == 1 and "the old checkpoint: the note bears no signature by the given key" in out


def test_a_size_with_no_checkpoint_is_a_usage_error(log: tuple[Path, str, Path, Path]) -> None:
    journal, origin, _, _ = log
    code, _, err = run_cli("audit", "consistency", "--journal", str(journal), "--origin", origin, "--old", "7")
    assert code == 2 and "no checkpoint of 7 records (it has: 5, 11, 17, 23, 27)" in err
