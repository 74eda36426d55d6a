"""``loom-otel audit list``, ``audit show`` and the canary: reasoning text never leaks without ``--text``."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from loom_otel.audit import ReasoningQuery, erase_execution, read_reasoning, read_reasoning_bounded
from loom_otel.cli.__main__ import build_parser, main
from loom_otel.cli._store_args import parse_since
from loom_otel.core import FileReasoningStore, ReasoningConfigError, Untrusted
from loom_otel.instrumentation.anthropic._guard import check_anthropic_request
from loom_otel.instrumentation.google_genai._guard import check_gemini_request
from tests.support.evidence import Blobs, make_recorder, redacted, text

CANARY = "CANARY-d41d8cd98f-private-reasoning"


def show(tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(
        ["audit", "show", "--store", f"file://{tmp_path / 'store'}", "--journal", str(tmp_path / "journal"), *extra]
    )
    out, err = io.StringIO(), io.StringIO()
    code = args.func(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def populated(tmp_path: Path) -> FileReasoningStore:
    store = FileReasoningStore(tmp_path / "store", fsync=False)
    recorder = make_recorder(store, tmp_path, journal=tmp_path / "journal")
    recorder.call([text(f"plan: {CANARY}\x1b[31m"), redacted()], execution_id="run-42", step_id="plan")
    recorder.call([text(f"plan again {CANARY}")], execution_id="run-42", step_id="plan")
    recorder.call([text(f"act {CANARY}")], execution_id="run-42", step_id="act")
    recorder.call([text(f"tenant {CANARY}")], execution_id="run-t", step_id="s", tenant="acme")
    return store


def test_table(populated: FileReasoningStore, tmp_path: Path) -> None:
    code, out, err = show(tmp_path, "--execution", "run-42")
    assert code == 0, err
    assert "execution run-42: 2 steps, 4 parts" in out
    assert "step plan" in out and "step act" in out
    for column in ("attempt", "kind", "status", "size", "digest", "provider", "model"):
        assert column in out
    assert "1 (superseded)" in out and "2 (received)" in out
    assert "claude-test -> claude-test-20251101" in out
    assert "redacted" in out and "anthropic" in out
    assert CANARY not in out and CANARY not in err


def test_text_is_fenced_and_terminal_safe(populated: FileReasoningStore, tmp_path: Path) -> None:
    code, out, _ = show(tmp_path, "--execution", "run-42", "--step", "plan", "--text")
    assert code == 0
    assert out.count(CANARY) == 2
    assert "<untrusted-model-output origin=llm-reasoning:plan>" in out
    assert "</untrusted-model-output>" in out
    assert "\x1b" not in out  # an escape sequence in model output is not passed to the terminal
    assert "step act" not in out


def test_json(populated: FileReasoningStore, tmp_path: Path) -> None:
    code, out, _ = show(tmp_path, "--execution", "run-42", "--json")
    assert code == 0 and CANARY not in out
    document = json.loads(out)
    assert [s["step_id"] for s in document["steps"]] == ["plan", "act"]
    first = document["steps"][0]["attempts"][0]
    assert (first["attempt"], first["received"]) == (1, False)
    assert [p["status"] for p in first["parts"]] == ["ok", "redacted"]
    _, with_text, _ = show(tmp_path, "--execution", "run-42", "--json", "--text")
    part = json.loads(with_text)["steps"][1]["attempts"][0]["parts"][0]
    assert part["text"] == f"act {CANARY}" and part["untrusted_origin"] == "llm-reasoning:act"


def test_exit_codes(populated: FileReasoningStore, tmp_path: Path) -> None:
    code, _, err = show(tmp_path, "--execution", "run-t")
    assert code == 3 and "acme" in err and "--tenant" in err
    assert show(tmp_path, "--execution", "run-t", "--tenant", "acme")[0] == 0
    assert show(tmp_path, "--execution", "nope")[0] == 3
    reading = read_reasoning(tmp_path / "journal", populated, execution_id="run-42", step_id="act")
    Blobs(populated).flip_last_byte(reading.parts[0].ref)
    code, out, _ = show(tmp_path, "--execution", "run-42")
    assert code == 1 and "digest-mismatch" in out
    journal = ["--journal", str(tmp_path / "journal")]
    args = build_parser().parse_args(["audit", "show", "--execution", "run-42", "--text", *journal])
    assert args.func(args, out=io.StringIO(), err=io.StringIO()) == 2  # text asked for, and no store


def test_canary_never_leaks(
    populated: FileReasoningStore, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    reading = read_reasoning(tmp_path / "journal", populated, execution_id="run-42")
    seen += [repr(reading), str(reading), repr(reading.parts), str(reading.parts[0].text)]
    bounded = read_reasoning_bounded(tmp_path / "journal", populated, ReasoningQuery(execution_id="run-42"))
    seen += [repr(bounded)]
    untrusted = reading.parts[0].text
    assert isinstance(untrusted, Untrusted)
    attempts: list[Callable[[], None]] = [
        lambda: check_anthropic_request({"system": untrusted, "messages": []}),
        lambda: check_anthropic_request({"system": untrusted.fenced(), "messages": []}),
        lambda: check_anthropic_request(
            {"messages": [{"role": "user", "content": [{"type": "text", "text": untrusted}]}]}
        ),
        lambda: check_gemini_request([untrusted], None),
    ]
    for attempt in attempts:
        with pytest.raises(ReasoningConfigError) as info:
            attempt()
        seen.append(str(info.value))
    seen += list(show(tmp_path, "--execution", "run-42")[1:])
    seen += list(show(tmp_path, "--execution", "run-42", "--json")[1:])
    erase_execution(populated, None, "run-42")
    seen += list(show(tmp_path, "--execution", "run-42")[1:])
    captured = capsys.readouterr()
    seen += [captured.out, captured.err, caplog.text]
    leaks = [s for s in seen if CANARY in s]
    assert not leaks


def listing(tmp_path: Path, *extra: str, store: bool = False) -> tuple[int, str, str]:
    argv = ["audit", "list", "--journal", str(tmp_path / "journal"), *extra]
    if store:
        argv += ["--store", f"file://{tmp_path / 'store'}"]
    args = build_parser().parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    code = args.func(args, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def rows(out: str) -> list[list[str]]:
    """The table's rows, split on runs of two spaces (the column gap)."""
    lines = out.split("\n\n")[0].splitlines()[2:]
    return [[cell.strip() for cell in re.split(r"\s{2,}", line)] for line in lines]


def test_list_newest_first_with_calls_steps_parts_and_statuses(populated: FileReasoningStore, tmp_path: Path) -> None:
    code, out, err = listing(tmp_path)
    assert code == 0, err
    assert out.splitlines()[0].split() == [
        "last",
        "capture",
        "execution",
        "tenant",
        "calls",
        "steps",
        "parts",
        "statuses",
        "providers",
    ]
    table = rows(out)
    assert [r[1:] for r in table] == [
        ["run-t", "acme", "1", "1", "1", "1 stored", "anthropic"],
        ["run-42", "-", "3", "2", "4", "3 stored, 1 redacted", "anthropic"],
    ]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", table[0][0])
    assert "not checked" in out and "--store" in out
    code, out, _ = listing(tmp_path, store=True)
    assert code == 0
    assert [r[6] for r in rows(out)] == ["1 ok", "3 ok, 1 redacted"]
    assert "not checked" not in out
    assert CANARY not in out


def test_list_tenant_since_limit_and_json(populated: FileReasoningStore, tmp_path: Path) -> None:
    assert [r[1] for r in rows(listing(tmp_path, "--tenant", "acme")[1])] == ["run-t"]
    assert [r[1] for r in rows(listing(tmp_path, "--limit", "1")[1])] == ["run-t"]
    assert [r[1] for r in rows(listing(tmp_path, "--since", "1h")[1])] == ["run-t", "run-42"]
    code, out, err = listing(tmp_path, "--since", "2999-01-01T00:00Z")
    assert (code, out) == (3, "") and "no capture records" in err
    code, out, _ = listing(tmp_path, "--json", store=True)
    assert code == 0 and CANARY not in out
    document = json.loads(out)
    assert [(e["execution_id"], e["tenant"]) for e in document] == [("run-t", "acme"), ("run-42", None)]
    run42 = document[1]
    assert (run42["calls"], run42["steps"], run42["parts"]) == (3, 2, 4)
    assert run42["statuses"] == {"ok": 3, "redacted": 1} and run42["statuses_checked"] is True
    assert run42["providers"] == ["anthropic"]
    assert run42["first_unix_nano"] <= run42["last_unix_nano"] < document[0]["last_unix_nano"]
    assert json.loads(listing(tmp_path, "--json", "--tenant", "nobody")[1]) == []


def test_list_exit_codes(populated: FileReasoningStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reading = read_reasoning(tmp_path / "journal", populated, execution_id="run-42", step_id="act")
    Blobs(populated).flip_last_byte(reading.parts[0].ref)
    code, out, _ = listing(tmp_path, store=True)
    assert code == 1 and "1 digest-mismatch" in out
    assert listing(tmp_path)[0] == 0  # unchecked: nothing read, nothing mismatched
    args = build_parser().parse_args(["audit", "list", "--journal", str(tmp_path / "missing")])
    assert args.func(args, out=io.StringIO(), err=io.StringIO()) == 2
    assert main(["audit", "list", "--journal", str(tmp_path / "journal"), "--since", "yesterday"]) == 2
    assert "neither an ISO 8601 time" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("90s", 1_000_000 - 90),
        ("15m", 1_000_000 - 900),
        ("1.5h", 1_000_000 - 5400),
        ("2d", 1_000_000 - 172_800),
        ("1w", 1_000_000 - 604_800),
        ("1970-01-12T13:46:40Z", 1_000_000),
        ("1970-01-12T13:46:40", 1_000_000),  # no offset: UTC
        ("1970-01-12T15:46:40+02:00", 1_000_000),
        ("1970-01-12", 950_400),
    ],
)
def test_since_accepts_iso_times_and_durations(value: str, expected: int) -> None:
    assert parse_since(value, now=1_000_000) == expected * 1_000_000_000
