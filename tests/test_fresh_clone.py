"""The repository stands on its own: a clone of HEAD into an empty temporary directory (no ``../shared``
beside it, no ``LOOM_OTEL_*`` in the environment) passes a fast suite that reads the wire fixtures, with
the current interpreter and the clone's own source first on the path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE_DIRS = (".", "instrumentation", "exporters")


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120)
    return done.stdout.strip()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git executable to clone the repository")
@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="runs from a git checkout (an sdist has no history)")
def test_a_clone_of_head_passes_its_fast_suite_alone(tmp_path: Path) -> None:
    head = _git("rev-parse", "HEAD", cwd=ROOT)
    clone = tmp_path / "elsewhere" / "loom-otel"
    clone.parent.mkdir()
    _git("clone", "--quiet", "--no-checkout", str(ROOT), str(clone), cwd=tmp_path)
    _git("checkout", "--quiet", head, cwd=clone)
    assert not (clone.parent / "shared").exists()
    assert (clone / "tests" / "fixtures" / "wire").is_dir()

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOM_OTEL_", "OTEL_", "PYTEST_"))}
    env["PYTHONPATH"] = os.pathsep.join(str(clone / d) for d in SOURCE_DIRS)
    where = subprocess.run(
        [sys.executable, "-c", "import loom_otel.core, loom_otel.testing; print(loom_otel.core.__file__)"],
        check=False,
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert Path(where.stdout.strip()).is_relative_to(clone), where.stdout + where.stderr

    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-m", "not slow", "tests/simulator"],
        check=False,
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    summary = run.stdout[-3000:] + run.stderr[-3000:]
    assert run.returncode == 0, summary
    assert " passed" in run.stdout, summary
    assert "skipped" not in run.stdout, summary
