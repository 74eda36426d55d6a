"""Erasure an auditor can prove: every erasure (one execution, a tenant's older executions, retention)
appends a chained tombstone; a read of an erased part says ``erased`` with the tombstone's time and
reason; a blob gone without a tombstone reads ``missing``."""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path

import pytest

from loom_otel.audit import (
    PartStatus,
    Retention,
    apply_retention,
    erase_execution,
    parse_retention,
    read_reasoning,
    verify,
)
from loom_otel.cli.__main__ import build_parser
from loom_otel.core import FileReasoningStore, ReasoningConfigError
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks
from tests.support.evidence import Recorder, make_recorder, text

CANARY = "CANARY-retention-6e2b"
DAY = 86400
RUNS = (("acme", "run-1"), ("acme", "run-2"), ("globex", "run-3"), (None, "run-4"))


@pytest.fixture
def store(tmp_path: Path) -> FileReasoningStore:
    return FileReasoningStore(tmp_path / "store", fsync=False)


@pytest.fixture
def recorder(store: FileReasoningStore, tmp_path: Path) -> Recorder:
    recorder = make_recorder(store, tmp_path)
    for tenant, execution_id in RUNS:
        recorder.call([text(f"{execution_id} {CANARY}")], execution_id=execution_id, step_id="s", tenant=tenant)
    return recorder


def _status(recorder: Recorder, store: FileReasoningStore, tenant: str | None, execution_id: str) -> PartStatus:
    (part,) = read_reasoning(recorder.journal_dir, store, execution_id=execution_id, tenant=tenant).parts
    return part.status


def _tombstones(recorder: Recorder) -> list[dict[str, object]]:
    return [r for r in iter_records(recorder.journal_dir) if r["type"] == "erasure"]


def _cli(tmp_path: Path, recorder: Recorder, *argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(
        [*argv, "--store", f"file://{tmp_path / 'store'}", "--journal", str(recorder.journal_dir)]
    )
    out, err = io.StringIO(), io.StringIO()
    code = args.func(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def later(monkeypatch: pytest.MonkeyPatch):
    """Move the wall clock the CLI reads forward by ``days`` (no test waits for time to pass)."""
    real = time.time

    def move(days: float) -> None:
        monkeypatch.setattr(time, "time", lambda: real() + days * DAY)

    return move


def test_missing_is_not_erased(recorder: Recorder, store: FileReasoningStore) -> None:
    """A blob deleted behind the store's back, with no tombstone, is lost evidence: ``missing``."""
    (part,) = read_reasoning(recorder.journal_dir, store, execution_id="run-4").parts
    store.delete(part.ref)
    (gone,) = read_reasoning(recorder.journal_dir, store, execution_id="run-4").parts
    assert (gone.status, gone.erasure) == (PartStatus.MISSING, None)


def test_a_tombstone_covers_only_captures_before_it(recorder: Recorder, store: FileReasoningStore) -> None:
    erase_execution(store, None, "run-4", journal=recorder.journal_dir)
    recorder.call([text("captured again after the erasure")], execution_id="run-4", step_id="t")
    reading = read_reasoning(recorder.journal_dir, store, execution_id="run-4")
    first, second = reading.parts
    assert first.status is PartStatus.ERASED and second.status is PartStatus.OK
    store.delete(second.ref)  # lost later: the earlier tombstone does not excuse it
    assert read_reasoning(recorder.journal_dir, store, execution_id="run-4").parts[1].status is PartStatus.MISSING


def test_tombstones_are_chained_and_verified(recorder: Recorder, store: FileReasoningStore) -> None:
    erase_execution(store, "acme", "run-1", journal=recorder.journal_dir, by="dpo@acme", reason="gdpr-17")
    (tombstone,) = _tombstones(recorder)
    assert tombstone["attributes"] == {
        "loom.execution.id": "run-1",
        "loom.tenant": "acme",
        "loom.erasure.scope": "execution",
        "loom.erasure.by": "dpo@acme",
        "loom.erasure.reason": "gdpr-17",
    }
    (origin,) = [o for o in verify(recorder.journal_dir).origins if o.origin == tombstone["origin"]]
    assert origin.modified == () and not origin.unanchored  # the erasure closed its chain with a checkpoint
    segment = next(p for p in recorder.journal_dir.rglob("*") if p.is_file() and b'"erasure"' in p.read_bytes())
    segment.write_bytes(segment.read_bytes().replace(b'"gdpr-17"', b'"gdpr-99"'))
    (tampered,) = [o for o in verify(recorder.journal_dir).origins if o.origin == tombstone["origin"]]
    assert tampered.modified == (tombstone["seq"],)


def test_erase_a_tenants_older_executions(recorder: Recorder, store: FileReasoningStore, tmp_path: Path, later) -> None:
    later(40)
    code, out, err = _cli(tmp_path, recorder, "erase", "--tenant", "acme", "--older-than", "30d")
    assert code == 0, err
    assert "erased 2 execution(s) of tenant 'acme' (2 blob(s))" in out
    assert "erased 1/2" in err and "erased 2/2" in err  # progress
    assert [_status(recorder, store, t, e) for t, e in RUNS] == ["erased", "erased", "ok", "ok"]
    (part,) = read_reasoning(recorder.journal_dir, store, execution_id="run-1", tenant="acme").parts
    assert part.erasure is not None
    assert (part.erasure.scope, part.erasure.reason) == ("older-than 30d", "request")
    assert "loom-otel erase" in part.erasure.by
    code, out, _ = _cli(tmp_path, recorder, "audit", "show", "--execution", "run-1", "--tenant", "acme")
    assert (
        code == 0 and "erased" in out and re.search(r"erased \d{4}-\d\d-\d\d .* by .*loom-otel erase.*: request", out)
    )
    code, out, _ = _cli(tmp_path, recorder, "audit", "show", "--execution", "run-1", "--tenant", "acme", "--json")
    (shown,) = json.loads(out)["steps"][0]["attempts"][0]["parts"]
    assert shown["status"] == "erased" and shown["erasure"]["scope"] == "older-than 30d"

    code, out, _ = _cli(tmp_path, recorder, "erase", "--tenant", "acme", "--older-than", "30d")
    assert code == 0 and "erased 0 execution(s)" in out and "2 older execution(s) were already erased" in out
    assert len(_tombstones(recorder)) == 2  # a second run adds no tombstone
    assert find_leaks([CANARY], directories=[recorder.journal_dir], texts=[out, err]) == []


def test_erase_before_a_date(recorder: Recorder, store: FileReasoningStore, tmp_path: Path) -> None:
    assert _cli(tmp_path, recorder, "erase", "--tenant", "globex", "--before", "2001-01-01")[0] == 0
    assert _status(recorder, store, "globex", "run-3") is PartStatus.OK
    code, out, _ = _cli(tmp_path, recorder, "erase", "--tenant", "globex", "--before", "2999-01-01", "--json")
    assert code == 0
    (erased,) = json.loads(out)["erased"]
    assert (erased["tenant"], erased["execution_id"], erased["blobs_removed"]) == ("globex", "run-3", 1)
    assert [_status(recorder, store, t, e) for t, e in RUNS] == ["ok", "ok", "erased", "ok"]
    (tombstone,) = _tombstones(recorder)
    assert tombstone["attributes"]["loom.erasure.scope"] == "before 2999-01-01"


def test_erase_usage_errors(recorder: Recorder, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["erase", "--tenant", "acme", "--older-than", "banana"])
    with pytest.raises(SystemExit):  # one selection at a time
        build_parser().parse_args(["erase", "--execution", "run-1", "--older-than", "30d"])


def test_retain_applies_the_environments_retention(
    recorder: Recorder, store: FileReasoningStore, tmp_path: Path, later, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = _cli(tmp_path, recorder, "retain")
    assert code == 2 and "LOOM_OTEL_RETENTION" in err
    monkeypatch.setenv("LOOM_OTEL_RETENTION", "banana")
    code, _, err = _cli(tmp_path, recorder, "retain")
    assert code == 2 and "LOOM_OTEL_RETENTION='banana'" in err and "30d" in err

    monkeypatch.setenv("LOOM_OTEL_RETENTION", "30d")
    assert _cli(tmp_path, recorder, "retain")[0] == 0
    assert [_status(recorder, store, t, e) for t, e in RUNS] == ["ok"] * 4  # nothing is 30 days old yet
    later(31)
    code, out, _ = _cli(tmp_path, recorder, "retain")
    assert code == 0 and "erased 4 execution(s)" in out
    assert [_status(recorder, store, t, e) for t, e in RUNS] == ["erased"] * 4
    (part,) = read_reasoning(recorder.journal_dir, store, execution_id="run-3", tenant="globex").parts
    assert part.erasure is not None and part.erasure.reason == "retention"
    assert part.erasure.by.startswith("policy LOOM_OTEL_RETENTION=30d")
    assert _cli(tmp_path, recorder, "retain", "--retention", "none")[0] == 0


def test_per_tenant_retention_wins(recorder: Recorder, store: FileReasoningStore) -> None:
    """What ``serve`` calls with the policy file's ``retention`` per tenant."""
    acme = Retention(60 * DAY, "60d", "policy file tenants.acme.retention")
    results = apply_retention(
        recorder.journal_dir,
        store,
        default=parse_retention("30d"),
        tenants={"acme": acme, "globex": None},
        now=time.time() + 40 * DAY,
    )
    assert sorted(r.execution_id for r in results) == ["run-4"]
    assert [_status(recorder, store, t, e) for t, e in RUNS] == ["ok", "ok", "ok", "erased"]


def test_invalid_retention_is_refused_at_instrument(monkeypatch: pytest.MonkeyPatch, config) -> None:
    monkeypatch.setenv("LOOM_OTEL_RETENTION", "30 days")
    with pytest.raises(ReasoningConfigError, match=r"LOOM_OTEL_RETENTION='30 days'.*30d, 12h"):
        AnthropicInstrumentor().instrument()
    AnthropicInstrumentor().uninstrument()


@pytest.mark.parametrize(("value", "seconds"), [("30d", 30 * DAY), ("12h", 43200), ("2w", 14 * DAY), (" 90M ", 5400)])
def test_parse_retention(value: str, seconds: int) -> None:
    parsed = parse_retention(value)
    assert parsed is not None and parsed.seconds == seconds
    assert parse_retention("none") is None
    for bad in ("0d", "-1d", "30", "1y", "banana"):
        with pytest.raises(ReasoningConfigError, match="LOOM_OTEL_RETENTION"):
            parse_retention(bad)


def test_retain_reads_each_tenants_retention_from_the_policy_file(
    recorder: Recorder, store: FileReasoningStore, tmp_path: Path, later
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[tenants.acme]\nretention = "60d"\n\n[tenants.globex]\nretention = "10d"\n')
    later(31)
    code, out, err = _cli(tmp_path, recorder, "retain", "--policy", str(policy))
    assert code == 0, err
    assert "per tenant: acme 60d, globex 10d" in out and "erased 1 execution(s)" in out
    assert [_status(recorder, store, t, e) for t, e in RUNS] == ["ok", "ok", "erased", "ok"]  # globex only
    code, out, _ = _cli(tmp_path, recorder, "retain", "--policy", str(policy), "--retention", "30d")
    assert code == 0 and "erased 1 execution(s)" in out  # the untenanted run-4 by the default
    assert [_status(recorder, store, t, e) for t, e in RUNS] == ["ok", "ok", "erased", "erased"]
    policy.write_text('[tenants.acme]\nretention = "soon"\n')
    code, _, err = _cli(tmp_path, recorder, "retain", "--policy", str(policy))
    assert code == 2 and "tenants.acme" in err and "'soon'" in err


def test_serve_applies_the_retention_while_it_runs(
    recorder: Recorder, store: FileReasoningStore, tmp_path: Path, later, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``loom-otel serve`` with a retention runs it in its own thread (the viewer itself is not started
    here: the thread is what ``run`` starts before uvicorn)."""
    from loom_otel.cli import _serve

    args = build_parser().parse_args(
        ["serve", "--journal", str(recorder.journal_dir), "--store", f"file://{tmp_path / 'store'}", "--tokens", "x"]
    )
    assert _serve._retention(args, str(recorder.journal_dir), args.store, io.StringIO()) is None  # none set
    args.retention = "30d"
    later(31)
    err = io.StringIO()
    thread = _serve._retention(args, str(recorder.journal_dir), args.store, err)
    assert thread is not None and thread.daemon
    thread.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and "retention erased" not in err.getvalue():
        time.sleep(0.05)
    assert "retention erased 4 execution(s)" in err.getvalue()
    assert [_status(recorder, store, t, e) for t, e in RUNS] == ["erased"] * 4
    args.journal, args.archive = None, str(tmp_path / "archive.jsonl")
    with pytest.raises(ReasoningConfigError, match="--journal"):
        _serve._retention(args, args.archive, args.store, io.StringIO())


def test_erase_older_than_for_a_tenant_with_no_captures_says_so(recorder: Recorder, tmp_path: Path, later) -> None:
    """A mistyped ``--tenant`` selects nothing: exit 3, naming the tenants that were captured, no tombstone;
    a tenant with captures but none old enough is a normal retention run (exit 0)."""
    later(40)
    code, out, err = _cli(tmp_path, recorder, "erase", "--tenant", "acmee", "--older-than", "30d")
    assert code == 3 and out == ""
    assert "nothing captured for tenant 'acmee'" in err and "(none), acme, globex" in err
    assert _tombstones(recorder) == []
    code, out, err = _cli(tmp_path, recorder, "erase", "--tenant", "acme", "--older-than", "90d")
    assert code == 0 and "erased 0 execution(s) of tenant 'acme'" in out, err
