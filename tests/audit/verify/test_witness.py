"""What one source cannot prove, the witness does: ``verify JOURNAL --against ARCHIVE`` catches a
journal cut back to a checkpoint, a deleted origin, a chain rewritten and re-signed; alone, verify says
what it could not check. Signatures: stripped or re-signed chains, mixed signing, terminal escapes in
origin names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from loom_otel.audit import verify
from loom_otel.cli.__main__ import main
from loom_otel.core._evidence._canonical import GENESIS, canonical_json, chain_hash
from loom_otel.core._evidence._journal._checkpoint import (
    CHECKPOINT_HEAD,
    CHECKPOINT_KEY,
    CHECKPOINT_SIGNATURE,
    CHECKPOINT_SIZE,
    Signer,
    checkpoint_payload,
    generate_key,
    load_public_key,
)
from loom_otel.core._evidence._journal._reader import all_segments, iter_records
from loom_otel.core._evidence._journal._writer import Journal, record_body
from loom_otel.exporters.chain._spans import RecordSpans


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "key.pem"
    generate_key(path)
    return path


@pytest.fixture
def attacker(tmp_path: Path) -> Signer:
    path = tmp_path / "attacker.pem"
    generate_key(path)
    return Signer.from_file(path)


def write_chain(journal_dir: Path, key: Path | None, records: int = 30) -> str:
    """``records`` captures with checkpoints at 11, 22 and 33 (close); returns the origin."""
    j = Journal(journal_dir, durability="os", checkpoint_key=key, checkpoint_every=10, checkpoint_interval=0)
    for i in range(records):
        j.append("capture", {"loom.step.id": f"s{i}", "loom.reasoning.part.size": [i]})
    j.close()
    return j.origin


def archive(journal_dir: Path, path: Path) -> Path:
    """What the collector's ``file`` exporter writes of the chained exporter's spans (OTLP JSON lines)."""
    spans = RecordSpans().build(list(iter_records(journal_dir)))
    lines = [json.dumps(MessageToDict(encode_spans(spans[i : i + 5]))) for i in range(0, len(spans), 5)]
    path.write_text("\n".join(lines) + "\n")
    return path


def segment_of(journal_dir: Path, origin: str) -> Path:
    ((path,),) = [[p for o, p in all_segments(journal_dir) if o == origin]]
    return path


def rewrite(segment: Path, *, start: int, signer: Signer | None, edit=None) -> None:
    """An attacker with write access: edit a record, re-chain from ``start`` (0-based line) on and
    re-sign every checkpoint from there with ``signer`` (``None``: strip the signatures)."""
    lines = segment.read_bytes().splitlines(keepends=True)
    prev = json.loads(lines[start - 1])["hash"] if start else GENESIS
    for i in range(start, len(lines)):
        record = json.loads(lines[i])
        if edit is not None and i == start:
            edit(record)
        record["prev"] = prev
        if record["type"] == "checkpoint":
            attributes = record["attributes"]
            attributes[CHECKPOINT_HEAD] = prev
            payload = checkpoint_payload(record["origin"], attributes[CHECKPOINT_SIZE], prev, record["time"])
            attributes[CHECKPOINT_SIGNATURE] = signer.sign(payload) if signer is not None else ""
            attributes[CHECKPOINT_KEY] = signer.public_hex if signer is not None else ""
        record["hash"] = prev = chain_hash(prev, record_body(record))
        lines[i] = canonical_json(record) + b"\n"
    segment.write_bytes(b"".join(lines))


def cli(capsys, *args: str) -> tuple[int, str]:
    code = main(["verify", *args])
    return code, capsys.readouterr().out


# -- item 5: the witness ------------------------------------------------------------------------


def test_a_journal_cut_back_to_a_checkpoint_verifies_alone_and_fails_against_the_archive(
    journal_dir: Path, key: Path, tmp_path: Path, capsys
) -> None:
    origin = write_chain(journal_dir, key)
    witness = archive(journal_dir, tmp_path / "archive.json")
    segment = segment_of(journal_dir, origin)
    segment.write_bytes(b"".join(segment.read_bytes().splitlines(keepends=True)[:22]))  # ends at checkpoint 22
    trusted = [load_public_key(key)]
    alone = verify(journal_dir, public_keys=trusted, require_signed=True)
    assert alone.ok and alone.records == 22
    assert any(limit.startswith("no witness") for limit in alone.limits)
    code, out = cli(capsys, str(journal_dir), "--key", str(key), "--require-signed")
    assert code == 0 and "OK" in out and "not checked: no witness (--against ARCHIVE)" in out

    report = verify(journal_dir, public_keys=trusted, against=witness)
    assert not report.ok
    assert report.witness is not None and report.witness.records == 33
    assert report.witness.only_in_witness == ((origin, 23, 33),) and report.witness.only_in_witness_count == 11
    assert report.witness.only_in_source == () and report.witness.differing == ()
    assert not any(limit.startswith("no witness") for limit in report.limits)
    code, out = cli(capsys, str(journal_dir), "--key", str(key), "--against", str(witness))
    assert code == 1 and f"{origin}: only in the witness: seq 23..33" in out and "only_in_witness 11" in out
    # and the other way round: the archive is the source, the journal its witness
    reverse = verify(witness, public_keys=trusted, against=journal_dir)
    assert not reverse.ok and reverse.witness is not None and reverse.witness.only_in_source == ((origin, 23, 33),)


def test_a_deleted_origin_is_caught_against_the_archive(journal_dir: Path, key: Path, tmp_path: Path) -> None:
    kept = write_chain(journal_dir, key, records=12)
    deleted = write_chain(journal_dir, key, records=5)
    witness = archive(journal_dir, tmp_path / "archive.json")
    shutil.rmtree(journal_dir / deleted)
    trusted = [load_public_key(key)]
    alone = verify(journal_dir, public_keys=trusted)
    assert alone.ok and [o.origin for o in alone.origins] == [kept]
    report = verify(journal_dir, public_keys=trusted, against=witness)
    assert not report.ok and report.witness is not None
    assert report.witness.origins_only_in_witness == ((deleted, 6),)
    assert report.witness.origins_only_in_source == () and report.witness.only_in_witness == ()
    assert any(deleted in p and "only in the witness" in p for p in report.problems)


def test_a_whole_journal_and_its_archive_agree(journal_dir: Path, key: Path, tmp_path: Path, capsys) -> None:
    write_chain(journal_dir, key)
    witness = archive(journal_dir, tmp_path / "archive")
    report = verify(journal_dir, public_keys=[load_public_key(key)], against=witness)
    assert report.ok, report.problems
    assert report.limits == () and report.witness is not None and report.witness.records == 33
    code, out = cli(capsys, str(journal_dir), "--key", str(key), "--against", str(witness))
    assert code == 0 and out.splitlines()[-1] == (
        "OK: every chain is whole and anchored; not checked: the reasoning store (the blobs the records name: "
        "pass --store URL)"
    )


def test_records_not_delivered_yet_are_reported(journal_dir: Path, tmp_path: Path) -> None:
    origin = write_chain(journal_dir, None)
    witness = archive(journal_dir, tmp_path / "archive.json")
    j = Journal(journal_dir, durability="os", checkpoint_key=None)
    j.append("capture", {"loom.step.id": "late"})
    j.close()
    report = verify(journal_dir, against=witness)
    assert report.witness is not None and report.witness.origins_only_in_source == ((j.origin, 2),)
    assert not report.ok and origin not in " ".join(report.problems)


def test_the_archives_missing_tail_is_not_yet_in_the_archive_never_a_cut(
    journal_dir: Path, key: Path, tmp_path: Path, capsys
) -> None:
    """A collector that acknowledged records and stopped before its ``file`` exporter flushed them leaves
    the archive short of the journal's tail: named for what it is, from either side, while a hole in the
    middle of the archive (later records arrived) stays "lost on the way"."""
    origin = write_chain(journal_dir, key)
    records = list(iter_records(journal_dir))
    short = tmp_path / "short.json"
    short.write_text(json.dumps(MessageToDict(encode_spans(RecordSpans().build(records[:20])))) + "\n")
    trusted = [load_public_key(key)]
    report = verify(journal_dir, public_keys=trusted, against=short)
    assert report.witness is not None
    assert report.witness.not_yet_archived == ((origin, 21, 33),) and report.witness.not_yet_archived_count == 13
    assert report.witness.only_in_source == () and report.witness.only_in_witness == ()
    (problem,) = report.problems
    assert problem.startswith("not yet in the archive 13 records") and "cut" not in problem
    reverse = verify(short, public_keys=trusted, against=journal_dir)
    assert reverse.witness is not None and reverse.witness.not_yet_archived == ((origin, 21, 33),)
    assert reverse.witness.only_in_witness == () and not any("cut" in p for p in reverse.witness.problems())
    code, out = cli(capsys, str(journal_dir), "--key", str(key), "--against", str(short))
    assert code == 1 and f"{origin}: not yet in the archive (the journal holds it): seq 21..33" in out
    holed = tmp_path / "holed.json"
    holed.write_text(json.dumps(MessageToDict(encode_spans(RecordSpans().build(records[:4] + records[7:])))) + "\n")
    middle = verify(journal_dir, public_keys=trusted, against=holed)
    assert middle.witness is not None and middle.witness.only_in_source == ((origin, 5, 7),)
    assert middle.witness.not_yet_archived == () and any("lost on the way" in p for p in middle.problems)


def test_a_rewritten_and_re_signed_journal_contradicts_the_archive(
    journal_dir: Path, key: Path, attacker: Signer, tmp_path: Path
) -> None:
    origin = write_chain(journal_dir, key)
    witness = archive(journal_dir, tmp_path / "archive.json")
    rewrite(segment_of(journal_dir, origin), start=4, signer=attacker, edit=lambda r: r["attributes"].update(x=1))
    assert verify(journal_dir).ok  # consistent on its own, and no trusted key to tell
    report = verify(journal_dir, against=witness)
    assert not report.ok and report.witness is not None
    assert report.witness.differing == tuple((origin, seq) for seq in range(5, 34))
    assert ("source", origin, 11) in report.witness.contradicted_heads
    assert ("witness", origin, 11) in report.witness.contradicted_heads


# -- item 7: signatures -------------------------------------------------------------------------


def test_a_chain_re_signed_with_another_key_says_signatures_went_unchecked(
    journal_dir: Path, key: Path, attacker: Signer, capsys
) -> None:
    origin = write_chain(journal_dir, key)
    rewrite(segment_of(journal_dir, origin), start=0, signer=attacker)
    report = verify(journal_dir)
    (limit,) = [x for x in report.limits if x.startswith("signatures not checked against a trusted key")]
    assert attacker.public_hex[:16] in limit
    code, out = cli(capsys, str(journal_dir))
    ok_line = out.splitlines()[-1]
    assert code == 0 and ok_line.startswith("OK") and "signatures not checked against a trusted key" in ok_line
    assert not verify(journal_dir, public_keys=[load_public_key(key)]).ok


def test_stripped_signatures_fail_with_a_trusted_key_and_are_named_without_one(
    journal_dir: Path, key: Path, capsys
) -> None:
    origin = write_chain(journal_dir, key)
    rewrite(segment_of(journal_dir, origin), start=0, signer=None)
    report = verify(journal_dir, public_keys=[load_public_key(key)])  # no --require-signed
    assert not report.ok and f"{origin}: unsigned_checkpoints 3" in report.problems
    code, out = cli(capsys, str(journal_dir))
    assert code == 0 and "3 unsigned checkpoint(s) accepted" in out.splitlines()[-1]


@pytest.mark.parametrize("how", ["strip", "other-key"])
def test_an_origin_mixing_signed_and_unsigned_or_two_keys_fails(
    journal_dir: Path, key: Path, attacker: Signer, how: str
) -> None:
    origin = write_chain(journal_dir, key)
    segment = segment_of(journal_dir, origin)
    rewrite(segment, start=21, signer=None if how == "strip" else attacker)  # checkpoints 22 and 33
    report = verify(journal_dir)
    (o,) = report.origins
    assert not report.ok
    if how == "strip":
        assert (o.signed_checkpoints, o.unsigned_checkpoints) == (1, 2)
        assert f"{origin}: mixed_signing 1 signed, 2 unsigned" in report.problems
    else:
        assert o.signing_keys == (load_public_key(key), attacker.public_hex)
        assert f"{origin}: key_changes 2 signing keys" in report.problems


# -- item 13: terminal escapes ------------------------------------------------------------------


def test_origin_names_are_cleaned_of_terminal_controls(tmp_path: Path, capsys) -> None:
    origin = "\x1b]0;owned\x07\x1b[2J\u202ehost"
    record = {"v": 1, "origin": origin, "seq": 1, "prev": GENESIS, "time": 1, "type": "capture", "attributes": {}}
    record["hash"] = chain_hash(GENESIS, record_body(record))
    gap = dict(record, seq=3, prev="ab" * 32)
    gap["hash"] = chain_hash(gap["prev"], record_body(gap))
    crafted = tmp_path / "crafted.json"
    crafted.write_bytes(canonical_json(record) + b"\n" + canonical_json(gap) + b"\n")
    code, out = cli(capsys, str(crafted))
    assert code == 1 and origin in " ".join(verify(crafted).problems)
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\ufffd]0;owned\ufffd\ufffd[2J\ufffdhost: gaps: seq 2..2" in out
