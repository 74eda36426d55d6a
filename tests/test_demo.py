"""The main job: ``loom-otel demo`` on the embedded defaults, as the README runs it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from loom_otel.core import FileReasoningStore
from loom_otel.core._journal._writer import iter_records

# How the README's install runs it (the venv's script, the venv not activated), and as a module.
LAUNCHERS = {
    "script": [str(Path(sys.executable).parent / "loom-otel")],
    "module": [sys.executable, "-m", "loom_otel.cli"],
}


@pytest.mark.slow
@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_demo_runs_end_to_end_without_network_or_key(tmp_path, launcher):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # the venv is not on the PATH
    done = subprocess.run(
        [*LAUNCHERS[launcher], "demo", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
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

    # The numbers agree: the model calls the demo says it made are the steps the audit table shows.
    counts = re.findall(r"(\d+) model calls made, (\d+) captured: (\d+) steps", out)
    assert counts == [("3", "3", "3"), ("2", "2", "2")], out
    for execution_id, steps in (("demo-anthropic", 3), ("demo-gemini", 2)):
        section = out.split(f"execution_id={execution_id!r}")[1].split("\n==")[0]
        assert len(re.findall(r"^[0-9a-f]{16}  ", section, re.MULTILINE)) == steps

    # The closing hints are commands that work as printed, with the same environment.
    hints = out.split("Try:\n")[1].split("\ndone in")[0].splitlines()
    assert [h.split()[len(LAUNCHERS[launcher]) : len(LAUNCHERS[launcher]) + 2] for h in hints] == [
        ["audit", "list"],
        ["audit", "show"],
    ]
    listed = subprocess.run(hints[0], shell=True, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"demo-anthropic\s+acme\s+3\s+3\s+3\s+3 ok", listed.stdout), listed.stdout
    assert re.search(r"demo-gemini\s+acme\s+2\s+2\s+2\s+2 ok", listed.stdout), listed.stdout
    shown = subprocess.run(hints[1], shell=True, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "execution demo-anthropic (tenant acme): 3 steps, 3 parts" in shown.stdout
    assert text.decode() in shown.stdout  # --text: the hint reads the reasoning back
