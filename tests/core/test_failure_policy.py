"""DESIGN "Failure policy" and "Environment", as a newcomer's process meets them (subprocesses:
``newcomer_app.py``): fail-closed only for what the configuration keeps, unusable locations reported
at ``instrument()``, the environment read at each ``instrument()``, warnings at the user's line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loom_otel.core._evidence._journal._reader import iter_records

from .newcomer_app import CANARY

pytestmark = pytest.mark.slow  # a subprocess (and the SDK's import) per test
APP = Path(__file__).with_name("newcomer_app.py")
ROOT = os.geteuid() == 0


def run_app(cwd: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("LOOM_OTEL_", "OTEL_"))}
    environ.update(env, PYTHONPATH=os.pathsep.join([str(Path.cwd()), *sys.path]), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(
        [sys.executable, str(APP), *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert CANARY not in done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.fixture
def readonly_cwd(tmp_path: Path) -> Any:
    cwd = tmp_path / "app"
    cwd.mkdir()
    cwd.chmod(0o555)
    yield cwd
    cwd.chmod(0o755)


def journal_warnings(report: dict[str, Any]) -> list[list[str]]:
    return [w for w in report["warnings"] if "audit journal directory" in w[2]]


def test_no_configuration_read_only_cwd_journals_in_the_state_directory(readonly_cwd: Path, tmp_path: Path) -> None:
    report = run_app(readonly_cwd, {"XDG_STATE_HOME": str(tmp_path / "state")}, "calls", "3")
    assert report["returned"] == 3 and report["captured"] == [3]
    assert list(readonly_cwd.iterdir()) == []  # never the working directory
    records = list(iter_records(tmp_path / "state" / "loom-otel" / "journal"))
    assert sum(1 for r in records if r["type"] == "capture") == 3
    assert journal_warnings(report) == []
    assert {w[1] for w in report["warnings"]} == {str(APP)}  # every warning points at the app's own line


def test_no_configuration_unusable_journal_location_every_call_returns_and_one_warning(
    readonly_cwd: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "state-is-a-file"
    blocker.write_text("")
    report = run_app(readonly_cwd, {"XDG_STATE_HOME": str(blocker)}, "calls", "3")
    assert report["returned"] == 3 and report["captured"] == [3]
    (warning,) = journal_warnings(report)
    assert str(blocker / "loom-otel" / "journal") in warning[2] and "LOOM_OTEL_AUDIT_JOURNAL" in warning[2]
    assert warning[0] == "LoomOtelWarning" and warning[1] == str(APP)
    assert [w for w in report["warnings"] if "unsigned" in w[2]] == []  # no checkpoint was ever written
    assert list(readonly_cwd.iterdir()) == []


@pytest.mark.skipif(ROOT, reason="root writes through file permissions: the not-a-directory case covers root")
def test_no_configuration_read_only_state_directory_one_warning(readonly_cwd: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o555)
    try:
        report = run_app(readonly_cwd, {"XDG_STATE_HOME": str(state)}, "calls", "3")
    finally:
        state.chmod(0o755)
    assert report["returned"] == 3 and report["captured"] == [3]
    assert len(journal_warnings(report)) == 1


def test_store_location_that_cannot_work_is_an_error_at_instrument_time(readonly_cwd: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = blocker / "store"
    report = run_app(readonly_cwd, {"LOOM_OTEL_REASONING_STORE": f"file://{store}"}, "calls", "1")
    assert report["returned"] == 0
    kind, message = report["instrument_error"]
    assert kind == "ReasoningConfigError" and str(store) in message and "LOOM_OTEL_REASONING_STORE" in message


@pytest.mark.skipif(ROOT, reason="root writes through file permissions: the not-a-directory case covers root")
def test_read_only_store_directory_is_an_error_at_instrument_time(readonly_cwd: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o555)
    try:
        report = run_app(readonly_cwd, {"LOOM_OTEL_REASONING_STORE": f"file://{store}"}, "calls", "1")
    finally:
        store.chmod(0o755)
    kind, message = report["instrument_error"]
    assert kind == "ReasoningConfigError" and str(store) in message and "LOOM_OTEL_REASONING_STORE" in message


def test_journal_location_that_cannot_work_with_a_store_is_an_error_at_instrument_time(
    readonly_cwd: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    journal = blocker / "journal"
    env = {"LOOM_OTEL_REASONING_STORE": "memory:", "LOOM_OTEL_AUDIT_JOURNAL": str(journal)}
    report = run_app(readonly_cwd, env, "calls", "1")
    assert report["returned"] == 0
    kind, message = report["instrument_error"]
    assert kind == "ReasoningConfigError" and str(journal) in message and "LOOM_OTEL_AUDIT_JOURNAL" in message


@pytest.mark.parametrize(("first", "expected"), [(None, [1, 0]), ("false", [0, 1])])
def test_instrument_reads_the_environment_each_time(
    first: str | None, expected: list[int], readonly_cwd: Path, tmp_path: Path
) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    if first is not None:
        env["LOOM_OTEL_REASONING"] = first
    report = run_app(readonly_cwd, env, "reinstrument", "1")
    assert report["returned"] == 2 and report["captured"] == expected
