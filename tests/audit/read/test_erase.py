"""Erasure: per execution, idempotent, isolated from identical text elsewhere, journal chain untouched."""

from __future__ import annotations

import io
from pathlib import Path

import loom_otel.audit as audit
from loom_otel.audit import PartStatus, erase_execution, read_reasoning
from loom_otel.cli.__main__ import build_parser
from loom_otel.core import FileReasoningStore, Untrusted
from loom_otel.core._evidence._canonical import GENESIS, chain_hash
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._evidence._journal._writer import record_body
from loom_otel.core._evidence._store._protocol import ReasoningStore
from tests.support.evidence import Recorder, make_recorder, text


def chain_verifies(journal_dir: Path) -> bool:
    verify = getattr(audit, "verify", None)
    if verify is not None:  # the real verifier
        report = verify(journal_dir)
        assert report.ok, report.problems
        return True
    heads: dict[str, tuple[int, str]] = {}
    for record in iter_records(journal_dir):
        origin = str(record["origin"])
        seq, head = heads.get(origin, (0, GENESIS))
        if record["seq"] != seq + 1 or record["prev"] != head:
            return False
        if chain_hash(head, record_body(record)) != record["hash"]:
            return False
        heads[origin] = (seq + 1, str(record["hash"]))
    return bool(heads)


def test_erasure_is_isolated_and_keeps_the_chain(recorder: Recorder, store: ReasoningStore) -> None:
    same = "identical reasoning in two executions"
    a = recorder.call([text(same), text("a only")], execution_id="run-a", step_id="s")
    b = recorder.call([text(same)], execution_id="run-b", step_id="s")
    assert a.parts[0].digest == b.parts[0].digest  # the same text...
    assert a.parts[0].text_ref != b.parts[0].text_ref  # ...is two blobs: no cross-execution dedupe
    recorder.runtime.journal.close()  # the closing checkpoint anchors the tail
    assert chain_verifies(recorder.journal_dir)

    result = erase_execution(store, None, "run-a", journal=recorder.journal_dir)

    assert (result.execution_id, result.blobs_removed) == ("run-a", 2)
    assert [p.status for p in read_reasoning(recorder.journal_dir, store, execution_id="run-a").parts] == [
        PartStatus.ERASED,
        PartStatus.ERASED,
    ]
    (kept,) = read_reasoning(recorder.journal_dir, store, execution_id="run-b").parts
    assert (kept.status, kept.text) == (PartStatus.OK, Untrusted(same, origin="llm-reasoning:s"))
    assert chain_verifies(recorder.journal_dir)
    assert erase_execution(store, None, "run-a", journal=recorder.journal_dir).blobs_removed == 0
    assert erase_execution(store, None, "never-ran", journal=recorder.journal_dir).blobs_removed == 0
    assert chain_verifies(recorder.journal_dir)  # the tombstones are chained records too


def test_cli_erase(tmp_path: Path) -> None:
    store = FileReasoningStore(tmp_path / "store", fsync=False)
    recorder = make_recorder(store, tmp_path, digest="hmac-sha256")
    recorder.call([text("erase me via the CLI")], execution_id="run-c", step_id="s", tenant="acme")

    def erase(*extra: str) -> tuple[int, str, str]:
        url = f"file://{tmp_path / 'store'}"
        journal = str(recorder.journal_dir)
        args = build_parser().parse_args(
            ["erase", "--execution", "run-c", "--store", url, "--journal", journal, *extra]
        )
        out, err = io.StringIO(), io.StringIO()
        code = args.func(args, out=out, err=err)
        return code, out.getvalue(), err.getvalue()

    # issue 31: without --tenant, an execution captured only under other tenants is named, and nothing erased
    code, out, err = erase()
    assert code == 3 and out == "" and "captured under tenant(s): acme (pass --tenant)" in err
    assert not [r for r in iter_records(recorder.journal_dir) if r["type"] == "erasure"]  # no tombstone either
    code, out, _ = erase("--tenant", "acme")
    assert code == 0 and "erased 1 blob(s)" in out and "digest key destroyed" in out and "acme" in out
    code, out, _ = erase("--tenant", "acme", "--json")
    assert code == 0 and '"blobs_removed": 0' in out
    code, out, err = erase("--tenant", "globex")  # captured only under acme: named again
    assert code == 3 and "acme" in err
    assert read_reasoning(recorder.journal_dir, store, execution_id="run-c", tenant="acme").parts[0].status == "erased"
    # no journal where the captures went: a tombstone elsewhere would prove nothing, so nothing is erased
    url = f"file://{tmp_path / 'store'}"
    args = build_parser().parse_args(["erase", "--execution", "run-c", "--tenant", "acme", "--store", url])
    err = io.StringIO()
    assert args.func(args, out=io.StringIO(), err=err) == 2 and "pass --journal" in err.getvalue()
    assert not (tmp_path / "store" / "journal").exists()
    args = build_parser().parse_args(["erase", "--execution", "x"])
    err = io.StringIO()
    assert args.func(args, out=io.StringIO(), err=err) == 2 and "--store" in err.getvalue()


def test_cli_erase_of_an_execution_never_captured_is_an_error(tmp_path: Path) -> None:
    """Issue 43: erasing nothing names what was looked for and writes no tombstone; --force writes it."""
    store = FileReasoningStore(tmp_path / "store", fsync=False)
    recorder = make_recorder(store, tmp_path)
    recorder.call([text("kept")], execution_id="run-d", step_id="s", tenant="acme")
    recorder.runtime.journal.checkpoint()

    def erase(*extra: str) -> tuple[int, str, str]:
        argv = ["erase", "--execution", "nope", "--tenant", "acme", "--store", f"file://{tmp_path / 'store'}"]
        args = build_parser().parse_args([*argv, "--journal", str(recorder.journal_dir), *extra])
        out, err = io.StringIO(), io.StringIO()
        code = args.func(args, out=out, err=err)
        return code, out.getvalue(), err.getvalue()

    code, out, err = erase()
    assert code == 3 and out == ""
    assert "nothing captured for execution 'nope' (tenant 'acme')" in err and str(recorder.journal_dir) in err
    assert "--force" in err
    assert not [r for r in iter_records(recorder.journal_dir) if r["type"] == "erasure"]
    code, out, err = erase("--force")
    assert code == 0, err
    assert [
        r["attributes"]["loom.execution.id"] for r in iter_records(recorder.journal_dir) if r["type"] == "erasure"
    ] == ["nope"]
