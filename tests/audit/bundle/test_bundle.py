"""``loom-otel audit export`` and ``loom-otel verify --bundle``: one execution's evidence checked with the
file and the key alone, each kind of tampering named, and nothing of another execution in the file."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._evidence._journal._checkpoint import generate_key
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.testing import find_leaks
from tests.audit.bundle.conftest import (
    ALICE_TEXT,
    BOB_TEXT,
    ERASED_TEXT,
    Evidence,
    export,
    load,
    make_evidence,
    run_cli,
    save,
    verify_bundle,
)

CANARIES = (ALICE_TEXT, BOB_TEXT, ERASED_TEXT)


def records_of(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for o in bundle["origins"] for r in o["records"]]


def body(record: dict[str, Any]) -> dict[str, Any]:
    parsed = json.loads(record["body"])
    assert isinstance(parsed, dict)
    return parsed


def test_export_and_verify_round_trip_on_a_real_capture(evidence: Evidence, tmp_path: Path) -> None:
    code, out, err = export(evidence, "run-alice", "acme", tmp_path / "alice.json")
    assert (code, err) == (0, "") and "parts: 2 ok" in out
    assert (tmp_path / "alice.json").stat().st_mode & 0o777 == 0o600  # it holds the texts
    bundle = load(tmp_path / "alice.json")
    types = sorted(body(r)["type"] for r in records_of(bundle))
    assert types == ["capture", "capture", "read", "read"]  # the captures, and the viewer's reads of them
    assert [p["text"] for p in bundle["parts"]] == [ALICE_TEXT, ALICE_TEXT]
    assert bundle["unanchored"] == []
    moved = tmp_path / "elsewhere"  # nothing but the file and the key
    moved.mkdir()
    shutil.copy(tmp_path / "alice.json", moved / "b.json")
    shutil.copy(evidence.public, moved / "key.pub")
    shutil.rmtree(evidence.journal)
    shutil.rmtree(evidence.root / "store")
    code, out, err = run_cli("verify", "--bundle", str(moved / "b.json"), "--key", str(moved / "key.pub"))
    assert code == 0, out
    assert "4 record(s) in 1 origin(s), 2 text(s) checked" in out and out.splitlines()[-1].startswith("OK:")
    code, out, _ = run_cli("verify", "--bundle", str(moved / "b.json"), "--key", str(moved / "key.pub"), "--json")
    document = json.loads(out)
    assert (code, document["ok"], document["records"], document["texts"], document["problems"]) == (0, True, 4, 2, [])
    assert find_leaks(CANARIES, spans=evidence.spans, texts=[out, err]) == []


def test_a_bundle_holds_nothing_of_another_execution(evidence: Evidence, tmp_path: Path) -> None:
    journal: list[dict[str, Any]] = list(iter_records(evidence.journal))
    others = [r for r in journal if r["attributes"].get(attr.EXECUTION_ID) not in (None, "run-alice")]
    assert {r["attributes"][attr.EXECUTION_ID] for r in others} == {"run-bob", "run-gone"}
    assert {r["origin"] for r in journal} == {journal[0]["origin"]}  # one origin: the executions interleave in it
    assert export(evidence, "run-alice", "acme", tmp_path / "alice.json")[0] == 0
    assert find_leaks(CANARIES, spans=evidence.spans, directories=[evidence.journal]) == []
    text = (tmp_path / "alice.json").read_text()
    for needle in ("run-bob", "run-gone", "globex", '"bob"', "carol", BOB_TEXT, ERASED_TEXT):
        assert needle not in text
    for record in others:
        assert str(record["hash"]) not in text
        for ref in record["attributes"].get(attr.PART_REF, ()):
            assert ref not in text
            assert ref.split("/")[0] not in text  # nor the other execution's scope


def test_an_erased_part_is_accounted_for_by_its_tombstone(evidence: Evidence, tmp_path: Path) -> None:
    assert export(evidence, "run-gone", "acme", tmp_path / "gone.json")[0] == 0
    bundle = load(tmp_path / "gone.json")
    (part,) = bundle["parts"]
    assert part["status"] == "erased" and "text" not in part
    code, out, _ = verify_bundle(evidence, tmp_path / "gone.json")
    assert code == 0 and "1 erased with their tombstones" in out
    (tombstone,) = [r for r in records_of(bundle) if body(r)["type"] == "erasure"]
    bundle["origins"][0]["records"].remove(tombstone)
    code, out, _ = verify_bundle(evidence, save(bundle, tmp_path / "no-tombstone.json"))
    assert code == 1 and "erased, but its tombstone is not in the bundle" in out


def _change_text(bundle: dict[str, Any]) -> None:
    bundle["parts"][0]["text"] = bundle["parts"][0]["text"].replace("alice", "mallory")


def _remove_record(bundle: dict[str, Any]) -> None:
    records = bundle["origins"][0]["records"]
    records.remove(next(r for r in records if body(r)["type"] == "capture"))


def _reorder(bundle: dict[str, Any]) -> None:
    records = bundle["origins"][0]["records"]
    records[0], records[1] = records[1], records[0]


def _bad_proof(bundle: dict[str, Any]) -> None:
    proof = bundle["origins"][0]["records"][0]["proof"]
    proof[0] = proof[0][::-1]


def _modify_record(bundle: dict[str, Any]) -> None:
    record = bundle["origins"][0]["records"][0]
    record["body"] = record["body"].replace('"s0"', '"s9"')


def _drop_text(bundle: dict[str, Any]) -> None:
    del bundle["parts"][0]


def _moved(bundle: dict[str, Any]) -> None:
    record = bundle["origins"][0]["records"][0]
    record["seq"] += 1


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        (_change_text, "its text is not the one the record's digest names (changed)"),
        (_remove_record, "a part of no capture record in the bundle (record removed?)"),
        (_reorder, "reordered"),
        (_bad_proof, "its inclusion proof does not lead to the signed root"),
        (_modify_record, "modified (its hash does not recompute from its content)"),
        (_drop_text, "not in the bundle (no text, no tombstone)"),
        (_moved, "moved"),
    ],
)
def test_verify_names_each_tampering(
    evidence: Evidence, tmp_path: Path, tamper: Callable[[dict[str, Any]], None], named: str
) -> None:
    assert export(evidence, "run-alice", "acme", tmp_path / "alice.json")[0] == 0
    bundle = load(tmp_path / "alice.json")
    tampered = copy.deepcopy(bundle)
    tamper(tampered)
    code, out, _ = verify_bundle(evidence, save(tampered, tmp_path / "tampered.json"))
    assert code == 1
    failures = [line for line in out.splitlines() if line.startswith("FAILED:")]
    assert any(named in line for line in failures), out
    assert not any(line.startswith("OK") for line in out.splitlines())


def test_a_record_of_another_execution_slipped_in_is_named(evidence: Evidence, tmp_path: Path) -> None:
    assert export(evidence, "run-alice", "acme", tmp_path / "alice.json")[0] == 0
    assert export(evidence, "run-bob", "globex", tmp_path / "bob.json")[0] == 0
    alice, bob = load(tmp_path / "alice.json"), load(tmp_path / "bob.json")
    assert alice["origins"][0]["checkpoint"] == bob["origins"][0]["checkpoint"]  # one log, one signed root
    slipped = bob["origins"][0]["records"][0]  # its own proof is valid: it IS in the log
    alice["origins"][0]["records"].append(slipped)
    code, out, _ = verify_bundle(evidence, save(alice, tmp_path / "mixed.json"))
    assert code == 1 and f"seq {slipped['seq']}: a record of another execution ('run-bob', tenant 'globex')" in out


def test_a_wrong_key_is_named(evidence: Evidence, tmp_path: Path) -> None:
    assert export(evidence, "run-alice", "acme", tmp_path / "alice.json")[0] == 0
    other = tmp_path / "other.pub"
    other.write_text(generate_key(tmp_path / "other.pem"))
    code, out, _ = run_cli("verify", "--bundle", str(tmp_path / "alice.json"), "--key", str(other))
    assert code == 1 and "its checkpoint note is not signed by the given key" in out
    assert [line for line in out.splitlines() if line.startswith("FAILED")] == [
        line for line in out.splitlines() if "its checkpoint note is not signed by the given key" in line
    ]  # the one failure, not a record "removed" for each of its parts


def test_records_past_the_last_checkpoint_are_refused_or_listed_unproven(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    (tmp_path / "key.pub").write_text(generate_key(key))
    journal_dir = tmp_path / "journal"
    journal = Journal(journal_dir, durability="os", checkpoint_key=key, checkpoint_every=10**6, checkpoint_interval=0)
    attributes = {attr.EXECUTION_ID: "run-late", attr.TENANT: "acme", attr.STEP_ID: "s0"}
    journal.append("erasure", attributes)
    journal.checkpoint()
    late = journal.append("erasure", attributes)
    evidence = Evidence(tmp_path, f"file://{tmp_path / 'store'}", journal_dir, key, tmp_path / "key.pub", ())
    code, _, err = export(evidence, "run-late", "acme", tmp_path / "late.json")
    assert code == 1 and f"{late.origin} seq {late.seq}" in err and "--allow-unanchored" in err
    assert not (tmp_path / "late.json").exists()
    code, out, _ = export(evidence, "run-late", "acme", tmp_path / "late.json", "--allow-unanchored")
    assert code == 0 and "1 unproven record(s)" in out
    code, out, _ = verify_bundle(evidence, tmp_path / "late.json")
    assert code == 1 and f"seq {late.seq}: unproven (after the origin's last checkpoint)" in out
    journal.close()


def test_an_execution_with_no_record_is_not_found(evidence: Evidence, tmp_path: Path) -> None:
    code, _, err = export(evidence, "run-alice", "globex", tmp_path / "x.json")  # right id, wrong tenant
    assert code == 3 and "no record of execution 'run-alice'" in err


@pytest.mark.slow
def test_hmac_digests_verify_with_the_bundles_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOM_OTEL_DIGEST", "hmac-sha256")
    evidence = make_evidence(tmp_path)
    assert export(evidence, "run-alice", "acme", tmp_path / "alice.json")[0] == 0
    bundle = load(tmp_path / "alice.json")
    assert "digest_key" in bundle
    code, out, _ = verify_bundle(evidence, tmp_path / "alice.json")
    assert code == 0, out
    bundle["parts"][0]["text"] += "."
    code, out, _ = verify_bundle(evidence, save(bundle, tmp_path / "changed.json"))
    assert code == 1 and "changed" in out


def test_verify_needs_a_path_a_bundle_or_two_checkpoints() -> None:
    code, _, err = run_cli("verify")
    assert code == 2 and "give a PATH, --bundle FILE or --consistency OLD NEW" in err


def test_a_journal_named_twice_is_read_once(evidence: Evidence, tmp_path: Path) -> None:
    code, _, err = export(evidence, "run-alice", "acme", tmp_path / "a.json", "--journal", str(evidence.journal))
    assert code == 0, err
    assert len(load(tmp_path / "a.json")["origins"]) == 1
    assert verify_bundle(evidence, tmp_path / "a.json")[0] == 0
