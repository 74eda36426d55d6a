"""Attempt numbers survive restarts: a rerun of a named (execution, step) in a new process is the next
attempt, read from the journal at the step's first capture (DESIGN "Reading and erasure")."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from loom_otel.core import execution, step
from loom_otel.core._evidence._journal import _attempts
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._runtime import _context
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request

CANARY = "CANARY-attempts-0b7d"
REPO = Path(__file__).resolve().parents[2]
RERUN = textwrap.dedent(
    f"""
    import sys
    from loom_otel.core import FileReasoningStore, ReasoningConfig, execution, step
    from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
    from loom_otel.testing import instrumented
    from loom_otel.testing.simulator import Simulator
    from tests.anthropic.modes import MODES, request

    store, journal = sys.argv[1], sys.argv[2]
    config = ReasoningConfig(store=FileReasoningStore(store, fsync=False), journal=journal)
    with instrumented(AnthropicInstrumentor(), config=config):
        with execution("run-restart", tenant="acme"), step("plan"):
            MODES["sync"](Simulator(reasoning_text="{CANARY}"), request())
    """
)


def _attempts_of(journal: Path) -> list[tuple[str, int]]:
    return [
        (str(r["attributes"]["loom.step.id"]), int(r["attributes"]["loom.attempt"]))
        for r in iter_records(journal)
        if r["type"] == "capture"
    ]


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a restart forgets: the in-memory counts and what was read of the journal."""
    monkeypatch.setattr(_context, "_attempts", {})
    monkeypatch.setattr(_attempts, "_by_directory", {})


@pytest.mark.slow  # two interpreters: about 10 s on a busy machine
def test_a_rerun_in_a_new_process_is_the_next_attempt(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "instrumentation"), str(REPO / "exporters")]),
    }
    seen: list[tuple[str, int]] = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", RERUN, str(tmp_path / "store"), str(journal)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        # each process is an origin of its own, listed by its random name: what this run added is its count
        added = list(_attempts_of(journal))
        for earlier in seen:
            added.remove(earlier)
        seen.extend(added)
    assert seen == [("plan", 1), ("plan", 2)]


@pytest.mark.parametrize("mode", ["sync", "stream", "messages.stream"])
def test_restart_counts_from_the_journal(mode, config, journal_dir, monkeypatch, caplog) -> None:
    _new_process(monkeypatch)  # counts kept by earlier tests of this process are not this test's
    sim = Simulator(reasoning_text=CANARY)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with execution("run-r"), step("plan"):
            MODES[mode](sim, request())
            MODES[mode](sim, request())
        _new_process(monkeypatch)
        with execution("run-r"), step("plan"):
            MODES[mode](sim, request())  # 3: two were recorded before the "restart"
        with execution("run-r"), step("act"):
            MODES[mode](sim, request())  # another step counts apart
        with execution("run-other"), step("plan"):
            MODES[mode](sim, request())  # another execution too
    assert _attempts_of(journal_dir) == [("plan", 1), ("plan", 2), ("plan", 3), ("act", 1), ("plan", 1)]
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text]) == []


def test_unnamed_steps_and_executions_read_no_journal(config, journal_dir, monkeypatch) -> None:
    """The hot path: a call with no ``step()`` or no ``execution()`` never asks the journal."""
    asked: list[tuple[object, ...]] = []
    monkeypatch.setattr(_attempts.RecordedAttempts, "highest", lambda self, *key: asked.append(key) or 0)
    sim = Simulator(reasoning_text=CANARY)
    with instrumented(AnthropicInstrumentor(), config=config):
        MODES["sync"](sim, request())
        with step("plan"):
            MODES["sync"](sim, request())
        with execution("run-x"):
            MODES["sync"](sim, request())
        with execution("run-x"), step("plan"):
            MODES["sync"](sim, request())
            MODES["sync"](sim, request())  # asked once per step and process
    assert asked == [(None, "run-x", "plan")]


def test_the_journal_is_read_once_per_process(tmp_path: Path) -> None:
    """Each question reads only what was appended since the last one; default steps are not kept."""
    from loom_otel.core._evidence._journal._writer import Journal

    journal = Journal(tmp_path / "j", durability="os")
    for attempt in (1, 2):
        journal.append("capture", {"loom.execution.id": "e", "loom.step.id": "s", "loom.attempt": attempt})
    journal.append(
        "capture",
        {"loom.execution.id": "e", "loom.step.id": "ab12", "loom.attempt": 1, "loom.call.span_id": "ab12"},
    )
    recorded = _attempts.RecordedAttempts(tmp_path / "j")
    assert recorded.highest(None, "e", "s") == 2
    assert recorded.highest(None, "e", "ab12") == 0  # a default step id: never remembered
    journal.append("capture", {"loom.execution.id": "e", "loom.step.id": "s", "loom.attempt": 3, "loom.tenant": "t"})
    assert recorded.highest(None, "e", "s") == 2 and recorded.highest("t", "e", "s") == 3
    journal.close()
