"""DESIGN "Failure policy": the chained exporter delivers every journal record when no span is
sampled (``always_off``, an unsampled parent), at the interpreter's exit, without a word on stderr."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from loom_otel.audit import verify
from loom_otel.core._evidence._journal._reader import iter_records

from .receiver import Receiver
from .unsampled_app import CANARY

pytestmark = pytest.mark.slow
APP = Path(__file__).with_name("unsampled_app.py")


@pytest.mark.parametrize("mode", ["always_off", "parent"])
def test_unsampled_records_all_arrive_at_exit(mode: str, receiver: Receiver, tmp_path: Path) -> None:
    receiver.start()
    journal_dir = tmp_path / "journal"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path]),
        "OTEL_TRACES_SAMPLER": "always_off" if mode == "always_off" else "parentbased_always_on",
    }
    done = subprocess.run(
        [sys.executable, str(APP), str(journal_dir), receiver.endpoint, "50", mode],
        capture_output=True,
        env=env,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert int(done.stdout) >= 50
    records = list(iter_records(journal_dir))
    assert sum(1 for r in records if r["type"] == "capture") == 50
    report = verify(receiver.path)
    assert report.ok, report.problems
    assert {o.origin: (o.records, o.last_seq) for o in report.origins} == {
        o.origin: (o.records, o.last_seq) for o in verify(journal_dir).origins
    }
    for origin in report.origins:
        assert origin.gaps == () and origin.duplicates_conflicting == () and origin.unanchored is None
    assert CANARY not in receiver.path.read_text()


def test_sigterm_delivers_what_is_owed_then_ends_the_process_as_sigterm(receiver: Receiver, tmp_path: Path) -> None:
    receiver.start()
    journal_dir = tmp_path / "journal"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path]),
        "OTEL_TRACES_SAMPLER": "always_off",
    }
    proc = subprocess.Popen(
        [sys.executable, str(APP), str(journal_dir), receiver.endpoint, "20", "always_off", "wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert proc.stdout is not None
    assert int(proc.stdout.readline()) >= 20
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM and stderr == "", stderr  # it still dies of SIGTERM
    report = verify(receiver.path)
    assert report.ok, report.problems
    (origin,) = report.origins
    captures = sum(1 for r in iter_records(journal_dir) if r["type"] == "capture")
    assert captures == 20 and origin.gaps == () and origin.unanchored is None
    assert origin.records == max(r["seq"] for r in iter_records(journal_dir))
