"""``loom-otel demo --dir D`` run twice: each run reports its own model calls, not both runs' (issue 31)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_a_second_demo_in_the_same_directory_reports_itself(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if "PYTHONPATH" in os.environ:  # a worktree run ahead of the installed checkout
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    outputs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "loom_otel.cli", "demo", "--dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
            env=env,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        outputs.append(done.stdout)
    first, second = outputs
    assert "earlier run" not in first
    assert "this directory holds 1 earlier run(s): this one is demo-anthropic-2 and demo-gemini-2" in second
    for out in outputs:
        counts = re.findall(r"(\d+) model calls made, (\d+) captured: (\d+) steps", out)
        assert counts == [("3", "3", "3"), ("2", "2", "2")], out
    assert "execution_id='demo-anthropic-2'" in second
    hint = next(line for line in second.splitlines() if " audit show " in line)
    assert "--execution demo-anthropic-2" in hint
    shown = subprocess.run(hint, shell=True, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert shown.returncode == 0 and "execution demo-anthropic-2 (tenant acme): 3 steps, 3 parts" in shown.stdout
