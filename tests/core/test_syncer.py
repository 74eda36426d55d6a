"""The sync helper (issue 49, target 2): loom-otel's own files are synced one by one, never the whole
file system, and a group of many is synced by a helper process, side by side, so the application's
threads do not win the interpreter back once per system call."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loom_otel.core._evidence import _syncer


@pytest.fixture(autouse=True)
def fresh_helper(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with no helper and ends its own."""
    _syncer._close()
    monkeypatch.setattr(_syncer, "_failed_at", None)
    yield
    _syncer._close()


def _files(root: Path, n: int) -> list[str]:
    paths = []
    for i in range(n):
        path = root / f"f{i}.pack"
        path.write_bytes(b"x" * (i + 1))
        paths.append(str(path))
    return paths


def _ready_helper(root: Path) -> _syncer._Helper:
    """Sync groups until the helper has started and answered one (the first is synced here)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        _syncer.sync_paths(_files(root, 4), [str(root)])
        helper = _syncer._current
        if helper is not None and helper.ready:
            return helper
        time.sleep(0.05)
    pytest.fail("the sync helper did not start")


def test_a_group_is_synced_by_one_helper_process_and_a_missing_path_is_skipped(tmp_path: Path) -> None:
    helper = _ready_helper(tmp_path)
    pid = helper.process.pid
    assert Path(f"/proc/{pid}/status").read_text().count(f"PPid:\t{os.getpid()}") == 1
    gone = str(tmp_path / "erased.pack")
    _syncer.sync_paths([*_files(tmp_path, 5), gone], [str(tmp_path)])
    assert _syncer._current is helper and helper.process.poll() is None  # the same helper, still running


def test_a_path_that_cannot_be_synced_raises_with_its_errno(tmp_path: Path) -> None:
    _ready_helper(tmp_path)
    not_a_directory = tmp_path / "f0.pack" / "child"
    with pytest.raises(OSError) as raised:
        _syncer.sync_paths([*_files(tmp_path, 3), str(not_a_directory)])
    assert raised.value.errno == errno.ENOTDIR and raised.value.filename == str(not_a_directory)
    with pytest.raises(OSError) as here:  # the same in this process (a small group)
        _syncer.sync_paths([str(not_a_directory)])
    assert here.value.errno == errno.ENOTDIR


def test_without_a_helper_the_paths_are_synced_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_syncer, "_EXECUTABLE", str(tmp_path / "no-python-here"))
    synced: list[str] = []
    real = _syncer.sync_here
    monkeypatch.setattr(_syncer, "sync_here", lambda path: (synced.append(path), real(path)))
    files = _files(tmp_path, 4)
    _syncer.sync_paths(files, [str(tmp_path)])
    assert synced == [*files, str(tmp_path)] and _syncer._current is None
    assert _syncer._failed_at is not None  # not tried again before ``_RETRY_SECONDS``


def test_a_helper_that_died_is_replaced_and_its_group_synced_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    helper = _ready_helper(tmp_path)
    helper.process.kill()
    helper.process.wait(10)
    monkeypatch.setattr(_syncer, "_RETRY_SECONDS", 0.0)
    _syncer.sync_paths(_files(tmp_path, 4))  # no error: synced here, or by a new helper
    replaced = _ready_helper(tmp_path)
    assert replaced is not helper and replaced.process.pid != helper.process.pid


def test_the_helper_ends_with_its_process(tmp_path: Path) -> None:
    script = (
        "import sys; from pathlib import Path; from loom_otel.core._evidence import _syncer\n"
        "root = Path(sys.argv[1]); paths = [str(root / f'f{i}') for i in range(4)]\n"
        "[Path(p).write_text('x') for p in paths]\n"
        "import time\n"
        "while not (_syncer._current and _syncer._current.ready):\n"
        "    _syncer.sync_paths(paths); time.sleep(0.05)\n"
        "_syncer.sync_paths(paths); print(_syncer._current.process.pid)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.strip())
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and "Z" not in _state(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists() or "Z" in _state(pid)


def _state(pid: int) -> str:
    try:
        return next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:"))
    except (OSError, StopIteration):
        return "Z"


def test_a_forked_child_starts_its_own_helper_and_the_parents_goes_on(tmp_path: Path) -> None:
    parent_helper = _ready_helper(tmp_path)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            child = _ready_helper(tmp_path)
            code = 0 if child is not parent_helper and child.process.pid != parent_helper.process.pid else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    _syncer.sync_paths(_files(tmp_path, 4))
    assert _syncer._current is parent_helper and parent_helper.process.poll() is None
