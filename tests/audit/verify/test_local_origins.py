"""Ordinary use verifies clean against the archive (issue 43): the viewer's read records (``serve``
without ``--forward``) and the tombstones of ``loom-otel erase`` are kept in the journal only, marked
``loom.audit.local``; ``verify --against`` says so instead of failing, and ``--key`` passes when they
were written with the deployment's checkpoint key. An origin of captures missing from the archive still
fails."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from loom_otel.audit import verify
from loom_otel.cli.__main__ import build_parser
from loom_otel.core import environment_variables as env
from loom_otel.core._evidence._journal._checkpoint import generate_key, load_public_key
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._evidence._store._file import FileReasoningStore
from loom_otel.viewer._reads import ReadLog
from tests.audit.verify.test_witness import archive, write_chain


def cli(*argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    code = args.func(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "checkpoint.pem"
    generate_key(path)
    monkeypatch.setenv(env.LOOM_OTEL_CHECKPOINT_KEY, str(path))  # the deployment's key, as the apps have it
    return path


def test_reads_and_erase_tombstones_verify_clean_against_the_archive(tmp_path: Path, key: Path) -> None:
    journal_dir = tmp_path / "journal"
    captures = write_chain(journal_dir, key, records=4)
    witness = archive(journal_dir, tmp_path / "archive.json")  # everything the app forwarded
    reads = ReadLog(journal_dir)  # `loom-otel serve` without --forward
    reads.refused("alice", "acme", "demo-anthropic")
    reads.close()
    store = FileReasoningStore(tmp_path / "store", fsync=False)
    code, _, err = cli(
        "erase", "--execution", "demo-anthropic", "--tenant", "acme", "--store", f"file://{store.root}",
        "--journal", str(journal_dir), "--force",
    )  # fmt: skip
    assert code == 0, err
    local = [r for r in iter_records(journal_dir) if r["origin"] != captures and r["type"] != "checkpoint"]
    assert sorted(r["type"] for r in local) == ["erasure", "read"]
    assert all(r["attributes"]["loom.audit.local"] is True for r in local)

    trusted = [load_public_key(key)]
    report = verify(journal_dir, public_keys=trusted, against=witness)
    assert report.ok, report.problems
    assert report.witness is not None and sum(n for _, n in report.witness.local_origins) == 4  # 2 and checkpoints
    assert report.witness.origins_only_in_source == ()
    code, out, _ = cli("verify", str(journal_dir), "--against", str(witness), "--key", str(key), "--require-signed")
    assert code == 0, out
    assert out.count("local origin") == len(report.witness.local_origins) and "not expected in the archive" in out
    assert out.splitlines()[-1].startswith("OK: every chain is whole")
    reverse = verify(witness, public_keys=trusted, against=journal_dir)  # the archive checked by the journal
    assert reverse.ok, reverse.problems


def test_an_undelivered_origin_of_captures_still_fails(tmp_path: Path, key: Path) -> None:
    journal_dir = tmp_path / "journal"
    write_chain(journal_dir, key, records=4)
    witness = archive(journal_dir, tmp_path / "archive.json")
    missing = write_chain(journal_dir, key, records=3)  # captured after the archive was taken: never delivered
    report = verify(journal_dir, public_keys=[load_public_key(key)], against=witness)
    assert not report.ok and report.witness is not None
    assert report.witness.origins_only_in_source == ((missing, 4),) and report.witness.local_origins == ()


def test_a_local_origin_only_in_the_archive_is_still_a_deleted_origin(tmp_path: Path, key: Path) -> None:
    """The marker excuses a chain the journal holds and the archive does not, never the reverse."""
    journal_dir = tmp_path / "journal"
    write_chain(journal_dir, key, records=4)
    reads = ReadLog(journal_dir)
    reads.refused("alice", "acme", "x")
    reads.close()
    witness = archive(journal_dir, tmp_path / "archive.json")  # holds the read origin too
    (read_origin,) = {r["origin"] for r in iter_records(journal_dir) if r["type"] == "read"}
    for path in (journal_dir / read_origin).iterdir():
        path.unlink()
    (journal_dir / read_origin).rmdir()
    report = verify(journal_dir, public_keys=[load_public_key(key)], against=witness)
    assert not report.ok and report.witness is not None
    assert [o for o, _ in report.witness.origins_only_in_witness] == [read_origin]
