"""Each tampering is detected AND located by verify; an attacker who recomputes hashes is caught by
the links and the signed checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loom_otel.audit import verify
from loom_otel.cli.__main__ import main
from loom_otel.core._evidence._canonical import canonical_json, chain_hash
from loom_otel.core._evidence._journal._checkpoint import CHECKPOINT_SIGNATURE, generate_key, load_public_key
from loom_otel.core._evidence._journal._writer import Journal, record_body
from tests.support.journaled import journal_lines


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "key.pem"
    generate_key(path)
    return path


@pytest.fixture
def chain(journal_dir: Path, key: Path) -> Path:
    """30 captures, signed checkpoints at 11, 22 and a final one at 33 (close)."""
    j = Journal(journal_dir, durability="os", checkpoint_key=key, checkpoint_every=10, checkpoint_interval=0)
    for i in range(30):
        j.append("capture", {"loom.step.id": f"s{i}", "loom.reasoning.part.size": [i, 1], "flag": [True, False]})
    j.close()
    report = verify(journal_dir, public_keys=[load_public_key(key)])
    assert report.ok, report.problems
    return journal_dir


def rewrite(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(lines))


def rechain(lines: list[bytes], start: int) -> list[bytes]:
    """What an attacker does: recompute every hash from line ``start`` on."""
    out = list(lines[:start])
    prev = json.loads(out[-1])["hash"] if out else "0" * 64
    for line in lines[start:]:
        record = json.loads(line)
        record["prev"] = prev
        record["hash"] = prev = chain_hash(prev, record_body(record))
        out.append(canonical_json(record) + b"\n")
    return out


def only(report, **expected) -> None:
    (o,) = report.origins
    assert not report.ok
    for name, value in expected.items():
        assert getattr(o, name) == value, (name, getattr(o, name))


def test_modified_record(chain: Path) -> None:
    segment, lines = journal_lines(chain)
    lines[4] = lines[4].replace(b'"s4"', b'"sX"')
    rewrite(segment, lines)
    only(verify(chain), modified=(5,), gaps=(), broken_links=())


def test_modified_record_with_recomputed_hashes_breaks_the_checkpoint(chain: Path, key: Path) -> None:
    segment, lines = journal_lines(chain)
    lines[4] = lines[4].replace(b'"s4"', b'"sX"')
    rewrite(segment, rechain(lines, 4))
    report = verify(chain, public_keys=[load_public_key(key)])
    (o,) = report.origins
    assert o.modified == () and o.checkpoint_mismatches == (11, 22, 33)


def test_deleted_record(chain: Path) -> None:
    segment, lines = journal_lines(chain)
    del lines[6]
    rewrite(segment, lines)
    only(verify(chain), gaps=((7, 7),), missing=1, modified=())


def test_swapped_records(chain: Path) -> None:
    segment, lines = journal_lines(chain)
    lines[11], lines[12] = lines[12], lines[11]
    rewrite(segment, lines)
    only(verify(chain), reordered=(12,), gaps=(), modified=())


def test_inserted_forged_record(chain: Path) -> None:
    segment, lines = journal_lines(chain)
    forged = json.loads(lines[14])
    forged["attributes"]["loom.step.id"] = "forged"
    forged["hash"] = chain_hash(forged["prev"], record_body(forged))
    lines.insert(15, canonical_json(forged) + b"\n")
    rewrite(segment, lines)
    only(verify(chain), duplicates_conflicting=(15,), modified=())


def test_truncated_tail_after_last_checkpoint_is_unanchored(chain: Path) -> None:
    segment, lines = journal_lines(chain)
    rewrite(segment, lines[:27])  # cut the final checkpoint (33) and records 28..32
    only(verify(chain), unanchored=(23, 27), gaps=())


def test_bad_checkpoint_signature(chain: Path, key: Path) -> None:
    segment, lines = journal_lines(chain)
    record = json.loads(lines[21])
    signature = record["attributes"][CHECKPOINT_SIGNATURE]
    record["attributes"][CHECKPOINT_SIGNATURE] = ("0" if signature[0] != "0" else "1") + signature[1:]
    lines[21] = canonical_json(record) + b"\n"
    rewrite(segment, rechain(lines, 21))
    report = verify(chain, public_keys=[load_public_key(key)])
    only(report, bad_signatures=(22,), modified=(), broken_links=())


def test_checkpoint_signed_by_an_untrusted_key(chain: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.pem"
    generate_key(other)
    only(verify(chain, public_keys=[load_public_key(other)]), bad_signatures=(11, 22, 33))


def test_duplicate_seq_with_different_content(chain: Path) -> None:
    segment, lines = journal_lines(chain)
    dup = json.loads(lines[7])
    dup["attributes"]["loom.step.id"] = "other"
    lines.append(canonical_json(dup) + b"\n")
    rewrite(segment, lines)
    report = verify(chain)
    (o,) = report.origins
    assert o.duplicates_conflicting == (8,) and not report.ok


def test_cli_verify_exit_codes_and_json(chain: Path, key: Path, tmp_path: Path, capsys) -> None:
    assert main(["verify", str(chain), "--key", str(key), "--require-signed"]) == 0
    assert "OK" in capsys.readouterr().out
    segment, lines = journal_lines(chain)
    del lines[6]
    rewrite(segment, lines)
    assert main(["verify", str(chain), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["origins"][0]["gaps"] == [[7, 7]]
    assert main(["verify", str(tmp_path / "missing")]) == 2  # unreadable
    (tmp_path / "empty.json").write_text("")
    assert main(["verify", str(tmp_path / "empty.json")]) == 1  # no records is never ok


def test_cli_keygen(tmp_path: Path, capsys) -> None:
    path = tmp_path / "k.pem"
    assert main(["keygen", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("-----BEGIN PUBLIC KEY-----")
    assert path.stat().st_mode & 0o777 == 0o600
    pub = tmp_path / "k.pub"
    pub.write_text(out)
    assert load_public_key(pub) == load_public_key(path)
    assert main(["keygen", str(path)]) == 2  # never overwrites
