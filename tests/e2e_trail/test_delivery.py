"""Done-means: every journal record reaches a real OTLP receiver despite queue overflow, an outage,
and a kill -9; the receiver's OTLP JSON verifies with 0 gaps."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from loom_otel.audit import verify
from loom_otel.core._evidence._journal._reader import iter_records

from .app import CANARY, build, one_capture
from .receiver import Receiver

pytestmark = pytest.mark.slow
APP = Path(__file__).with_name("app.py")


def check(received: Path, journal_dir: Path) -> None:
    report = verify(received)
    journal = verify(journal_dir)
    assert {o.origin: o.records for o in report.origins} == {o.origin: o.records for o in journal.origins}
    for o in report.origins:
        assert o.gaps == () and o.modified == () and o.broken_links == () and o.duplicates_conflicting == ()
    assert CANARY not in received.read_text()


def test_ten_thousand_captures_through_an_overflowing_queue(receiver: Receiver, tmp_path: Path) -> None:
    receiver.start()
    runtime, provider, _ = build(tmp_path / "journal", receiver.endpoint, queue=16)
    for _ in range(10_000):
        one_capture(runtime, provider)
    provider.shutdown()
    runtime.journal.close()
    report = verify(receiver.path)
    assert report.ok, report.problems  # the shutdown checkpoint anchors the whole chain
    (origin,) = report.origins
    captures = sum(1 for r in iter_records(tmp_path / "journal") if r["type"] == "capture")
    assert captures == 10_000 and origin.gaps == () and origin.records == origin.last_seq
    check(receiver.path, tmp_path / "journal")


def test_receiver_down_for_the_first_half(receiver: Receiver, tmp_path: Path) -> None:
    # an RPC deadline with room for a busy machine (the receiver shares this process and its GIL)
    runtime, provider, _ = build(tmp_path / "journal", receiver.endpoint, timeout=5.0, sweep_interval=0.2)
    for _ in range(2_000):
        one_capture(runtime, provider)
    receiver.start()
    for _ in range(2_000):
        one_capture(runtime, provider)
    provider.shutdown()
    report = verify(receiver.path)
    assert report.ok, report.problems
    assert report.origins[0].records == runtime.journal.head[0]
    check(receiver.path, tmp_path / "journal")


def test_kill_9_then_the_next_process_delivers_the_rest(receiver: Receiver, tmp_path: Path) -> None:
    receiver.start()
    journal_dir = tmp_path / "journal"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    proc = subprocess.Popen(
        [sys.executable, str(APP), str(journal_dir), receiver.endpoint, "1000000"],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if int(line) >= 3_000:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    written = max(r["seq"] for r in iter_records(journal_dir))
    before = verify(receiver.path)
    assert before.origins[0].records < written or before.origins[0].unanchored  # something was owed
    second = receiver.forward(journal_dir, env)
    assert second.returncode == 0, second.stderr
    report = verify(receiver.path)
    (origin,) = report.origins
    assert origin.records == written and origin.gaps == ()
    assert origin.duplicates_conflicting == () and origin.modified == () and origin.broken_links == ()
    # the dead chain ends where it was killed, after its last periodic checkpoint: unanchored, as it should
    assert origin.unanchored is None or origin.unanchored[1] == written
