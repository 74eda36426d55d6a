"""When Phoenix does not start, the failure says so, where its log is (kept, outside pytest's temporary
folders that other runs prune) and the log's tail (issue 43: a failure under load left nothing to read)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.support.phoenix import running_phoenix


def _fake(tmp_path: Path, body: str) -> str:
    exe = tmp_path / "phoenix"
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(0o755)
    return str(exe)


def _failure(exe: str) -> tuple[str, Path]:
    with pytest.raises(pytest.fail.Exception) as failed, running_phoenix(exe, timeout=3):
        pass
    message = str(failed.value)
    found = re.search(r"its log is (\S+);", message)
    assert found is not None, message
    return message, Path(found.group(1))


def test_a_phoenix_that_never_answers_fails_with_its_log(tmp_path: Path) -> None:
    message, log = _failure(_fake(tmp_path, 'echo "migrating the database: step 7 of 9"\nexec sleep 600'))
    assert message.startswith("Phoenix did not start (no answer from http://127.0.0.1:")
    assert "within 3 s" in message and "migrating the database: step 7 of 9" in message
    assert log.is_file() and "step 7 of 9" in log.read_text()  # kept where the message points
    assert not log.is_relative_to(tmp_path.parent)  # not in pytest's pruned temporary folders
    shutil.rmtree(log.parent)


def test_a_phoenix_that_exits_fails_at_once_with_its_code(tmp_path: Path) -> None:
    message, log = _failure(_fake(tmp_path, 'echo "ImportError: no module named sqlean" >&2\nexit 4'))
    assert message.startswith("Phoenix did not start (it exited with code 4)")
    assert "ImportError: no module named sqlean" in message and log.is_file()
    shutil.rmtree(log.parent)
