"""The main job: ``loom-otel demo`` on the embedded defaults, as the README runs it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from loom_otel.core import FileReasoningStore
from loom_otel.core._journal import iter_records


@pytest.mark.slow
def test_demo_runs_end_to_end_without_network_or_key(tmp_path):
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "loom_otel.cli", "demo", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stdout + done.stderr
    assert elapsed < 10, f"demo took {elapsed:.1f} s"
    out = done.stdout
    assert "without loom-otel the vendor answers: 400" in out and "with loom-otel: accepted" in out
    assert "loom.reasoning.dropped reason=prefix_changed" in out
    assert out.count(": ok") == 2  # journal and archive verify, signed checkpoints required
    # The readable reasoning is in the store and nowhere else the demo wrote.
    store = FileReasoningStore(tmp_path / "store")
    record = next(r for r in iter_records(tmp_path / "journal") if r["type"] == "capture")
    attributes = record["attributes"]
    text = store.get(
        attributes["loom.reasoning.part.ref"][0], tenant="acme", execution_id=attributes["loom.execution.id"]
    )
    assert text
    for path in [tmp_path / "collector" / "traces.jsonl", *Path(tmp_path / "journal").rglob("*.jsonl")]:
        assert text not in path.read_bytes(), path
    assert text.decode() not in out
