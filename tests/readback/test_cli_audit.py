"""``loom-otel audit show`` and the canary: reasoning text never leaks without ``--text``."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from loom_otel.audit import ReasoningQuery, erase_execution, read_reasoning, read_reasoning_bounded
from loom_otel.cli.__main__ import build_parser
from loom_otel.core import FileReasoningStore, ReasoningConfigError, Untrusted
from loom_otel.core._guard import check_anthropic_request, check_gemini_request
from tests.readback.conftest import Blobs, make_recorder, redacted, text

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
    args = build_parser().parse_args(["audit", "show", "--execution", "x", "--journal", str(tmp_path / "journal")])
    assert args.func(args, out=io.StringIO(), err=io.StringIO()) == 2  # no store


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
