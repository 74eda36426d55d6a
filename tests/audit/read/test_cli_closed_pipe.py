"""Every ``loom-otel`` command ends quietly when its reader goes away (``loom-otel audit show ... | head``):
exit code 141 (128 + SIGPIPE, as a shell reports it) and nothing on stderr, no ``BrokenPipeError``."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from loom_otel.core import FileReasoningStore
from tests.support.evidence import make_recorder, redacted, text


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    store = FileReasoningStore(tmp_path / "store", fsync=False)
    recorder = make_recorder(store, tmp_path, journal=tmp_path / "journal")
    for i in range(3):
        recorder.call([text(f"thinking {i}"), redacted()], execution_id="run-1", step_id=f"s{i}")
    return tmp_path


def closed_stdout(*argv: str, cwd: Path) -> tuple[int, str]:
    """Run ``loom-otel argv`` with a stdout pipe whose reading end is closed before it writes anything."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "loom_otel.cli", *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    try:
        err = proc.stderr.read()
        return proc.wait(timeout=60), err
    finally:
        proc.kill()
        proc.wait()


SHOW = ["audit", "show", "--execution", "run-1", "--store", "file://{store}", "--journal", "journal"]
COMMANDS = {
    "audit show": SHOW,
    "audit show --text": [*SHOW, "--text"],
    "audit list": ["audit", "list", "--journal", "journal"],
    "audit list --json": ["audit", "list", "--journal", "journal", "--json"],
    "verify": ["verify", "journal"],
    "keygen": ["keygen", "new.key"],
    "--help": ["--help"],
    "audit list --help": ["audit", "list", "--help"],
    "simulate": ["simulate", "--port", "0"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_closed_pipe_ends_the_command_quietly(name: str, recorded: Path) -> None:
    code, err = closed_stdout(*(a.format(store=recorded / "store") for a in COMMANDS[name]), cwd=recorded)
    expected = (
        "private key written to new.key (0600); set LOOM_OTEL_CHECKPOINT_KEY=new.key\n" if name == "keygen" else ""
    )
    assert err == expected
    assert code == 141


def test_a_reader_that_stops_early_sees_the_first_lines(recorded: Path) -> None:
    """The shell form: ``loom-otel audit show ... | head -n 2``, with the pipeline's status checked."""
    command = "set -o pipefail; " + shlex.join(
        [sys.executable, "-m", "loom_otel.cli", *(a.format(store=recorded / "store") for a in SHOW), "--text"]
    )
    done = subprocess.run(
        ["bash", "-c", command + " | head -n 2"],
        check=False,
        cwd=recorded,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(recorded)},
    )
    assert done.stdout.startswith("execution run-1: 3 steps, 6 parts\n")
    assert done.stderr == ""
    assert done.returncode in (0, 141)  # 141 when head left before the last write
