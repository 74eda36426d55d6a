"""The CLI never claims what it did not do (issue 31): ``verify`` says whether it read the store and
checks it with ``--store``; ``audit show`` needs a store only for text; usage errors are usage errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from loom_otel.audit import read_reasoning
from loom_otel.cli.__main__ import build_parser, main
from loom_otel.core import FileReasoningStore
from tests.support.evidence import Blobs, make_recorder, redacted, text

CANARY = "CANARY-5e0a77c1-newcomer-reasoning"


def run(*argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    code = args.func(args, out=out, err=err)
    assert CANARY not in out.getvalue() + err.getvalue() or "--text" in argv
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def populated(tmp_path: Path) -> FileReasoningStore:
    store = FileReasoningStore(tmp_path / "store", fsync=False)
    recorder = make_recorder(store, tmp_path, journal=tmp_path / "journal")
    recorder.call([text(f"plan {CANARY}"), redacted()], execution_id="run-1", step_id="plan")
    recorder.call([text(f"act {CANARY}")], execution_id="run-1", step_id="act")
    recorder.call([text(f"tenant {CANARY}")], execution_id="run-2", step_id="s", tenant="acme")
    recorder.runtime.journal.checkpoint()
    return store


def _refs(tmp_path: Path, store: FileReasoningStore) -> list[str]:
    reading = read_reasoning(tmp_path / "journal", store, execution_id="run-1")
    return [p.ref for p in reading.parts if p.ref]


def test_verify_without_a_store_says_the_store_was_not_checked(populated: FileReasoningStore, tmp_path: Path) -> None:
    code, out, _ = run("verify", str(tmp_path / "journal"))
    last = out.splitlines()[-1]
    assert code == 0 and last.startswith("OK: every chain is whole")
    assert "not checked" in last and "reasoning store" in last and "--store" in last


def test_verify_with_the_store_reads_every_blob_the_records_name(populated: FileReasoningStore, tmp_path: Path) -> None:
    store = f"file://{tmp_path / 'store'}"
    code, out, err = run("verify", str(tmp_path / "journal"), "--store", store)
    assert code == 0, err
    assert "store: 3 part(s) named by the records: 3 whole, 0 digest-mismatch, 0 erased, 0 missing" in out
    assert "reasoning store" not in out.splitlines()[-1]  # checked: not listed as unchecked
    Blobs(populated).flip_last_byte(_refs(tmp_path, populated)[1])
    code, out, _ = run("verify", str(tmp_path / "journal"), "--store", store)
    assert code == 1 and "1 digest-mismatch" in out
    assert out.splitlines()[-1].startswith("FAILED:") and "differ from their records" in out
    assert "execution run-1" in out
    code, out, _ = run("verify", str(tmp_path / "journal"), "--store", store, "--json")
    document = json.loads(out)
    assert code == 1 and document["ok"] is False and len(document["store"]["mismatched"]) == 1


def test_verify_with_the_store_tells_erased_from_missing_blobs(populated: FileReasoningStore, tmp_path: Path) -> None:
    from loom_otel.audit import erase_execution

    erase_execution(populated, "acme", "run-2", journal=tmp_path / "journal")
    code, out, _ = run("verify", str(tmp_path / "journal"), "--store", str(tmp_path / "store"))
    assert "1 erased, 0 missing" in out and "erased (a tombstone records it)" in out and "execution run-2" in out
    assert code == 0 and "(1 erased, each with its tombstone)" in out.splitlines()[-1]
    populated.delete(_refs(tmp_path, populated)[0])  # gone, and no tombstone says why
    code, out, _ = run("verify", str(tmp_path / "journal"), "--store", str(tmp_path / "store"))
    assert code == 1 and "1 missing" in out and "lost evidence" in out and "execution run-1" in out, out
    assert out.splitlines()[-1].startswith("FAILED:") and "without a tombstone" in out.splitlines()[-1]


def test_verify_with_a_store_that_cannot_be_opened_is_exit_2(populated: FileReasoningStore, tmp_path: Path) -> None:
    code, _, err = run("verify", str(tmp_path / "journal"), "--store", "banana://x")
    assert code == 2 and "unknown scheme 'banana'" in err


def test_audit_show_without_a_store_reads_the_records(populated: FileReasoningStore, tmp_path: Path) -> None:
    code, out, err = run("audit", "show", "--execution", "run-1", "--journal", str(tmp_path / "journal"))
    assert code == 0, err
    assert "execution run-1: 2 steps, 3 parts" in out and "stored" in out and "redacted" in out
    assert "not checked: pass --store URL" in out
    code, _, err = run("audit", "show", "--execution", "run-1", "--journal", str(tmp_path / "journal"), "--text")
    assert code == 2 and "no reasoning store" in err


@pytest.mark.parametrize("limit", ["-1", "0", "two"])
def test_audit_list_limit_below_one_is_a_usage_error(limit: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "list", "--limit", limit]) == 2
    assert "--limit" in capsys.readouterr().err


def test_the_readme_cli_table_lists_the_store_and_journal_options() -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `loom-otel audit show"))
    assert "--store" in row and "--journal" in row


def test_the_readme_stands_alone() -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert "DESIGN.md" not in readme and "shared notes" not in readme


@pytest.mark.parametrize("kind", ["missing", "file", "empty directory"])
def test_forward_of_something_that_is_not_a_journal_is_an_error(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = {"missing": tmp_path / "nope", "file": tmp_path / "README.md", "empty directory": tmp_path / "d"}[kind]
    if kind == "file":
        target.write_text("# not a journal\n")
    elif kind == "empty directory":
        target.mkdir()
    assert main(["forward", str(target), "--inner", "none", "--timeout", "1"]) == 2
    captured = capsys.readouterr()
    assert "is not a journal directory" in captured.err and str(target) in captured.err
    assert "forwarded" not in captured.out


def test_forward_of_a_journal_still_delivers(populated: FileReasoningStore, tmp_path: Path, capsys) -> None:
    assert main(["forward", str(tmp_path / "journal"), "--inner", "none", "--timeout", "5"]) == 0
    assert "forwarded: every record" in capsys.readouterr().out


@pytest.mark.parametrize("url", ["not-a-url", "ftp://host/x", "http://", "http://host:port"])
def test_tail_with_a_url_that_is_not_one_is_a_usage_error(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tail", "--execution", "x", "--url", url]) == 2
    err = capsys.readouterr().err
    assert "--url" in err and "Traceback" not in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"loom-otel {version('loom-otel')}"


def test_audit_verify_and_audit_erase_are_the_top_level_commands(
    populated: FileReasoningStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "verify", str(tmp_path / "journal")]) == 0
    assert "OK: every chain is whole" in capsys.readouterr().out
    store = f"file://{tmp_path / 'store'}"
    assert (
        main(
            [
                "audit",
                "erase",
                "--execution",
                "run-2",
                "--tenant",
                "acme",
                "--store",
                store,
                "--journal",
                str(tmp_path / "journal"),
            ]
        )
        == 0
    )
    assert "erased 1 blob(s)" in capsys.readouterr().out
