"""The fork server the matrix's bare runs come from (tests/frameworks/forkserver.py): each run is the
app as ``python app.py`` runs it, whatever ran before it in the same server."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .forkserver import ForkServer

APP = """\
import json
import os
import sys
import threading
import time

import colorsys  # a library the server imports once, before any run

STATE = []
STATE.append(os.environ["RUN"])
colorsys.RUN = getattr(colorsys, "RUN", []) + [os.environ["RUN"]]
threading.Thread(target=lambda: (time.sleep(0.3), print("a thread joined at exit", file=sys.stderr))).start()
print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "state": STATE, "library": colorsys.RUN}))
if os.environ["RUN"] == "fails":
    raise ValueError("the app's own error")
if os.environ["RUN"] == "exits":
    sys.exit(3)
if os.environ["RUN"] == "hangs":
    threading.Event().wait()
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ForkServer]:
    app = tmp_path / "apps" / "app.py"
    app.parent.mkdir()
    app.write_text(textwrap.dedent(APP))
    forks = ForkServer(Path(sys.executable), app, dict(os.environ), tmp_path / "runs")
    yield forks
    forks.close()


def _run(server: ForkServer, name: str, timeout: int = 60) -> tuple[int, str, str]:
    completed = server.run({**os.environ, "RUN": name}, timeout)
    return completed.returncode, completed.stdout, completed.stderr


def test_each_run_starts_from_the_imports_alone(server: ForkServer, tmp_path: Path) -> None:
    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda name: _run(server, name), ["one", "two", "three", "four"]))
    for name, (code, stdout, stderr) in zip(["one", "two", "three", "four"], runs, strict=True):
        assert code == 0, stderr
        app = tmp_path / "apps" / "app.py"
        assert json.loads(stdout) == {"argv": [str(app)], "path0": str(app.parent), "state": [name], "library": [name]}
        assert "a thread joined at exit" in stderr


def test_an_exit_code_and_an_exception_are_the_apps(server: ForkServer) -> None:
    code, _, stderr = _run(server, "exits")
    assert code == 3
    code, _, stderr = _run(server, "fails")
    assert code == 1 and "ValueError: the app's own error" in stderr and stderr.startswith("Traceback")
    assert _run(server, "after")[0] == 0


def test_a_run_past_its_timeout_is_killed(server: ForkServer) -> None:
    assert _run(server, "hangs", timeout=2)[0] == -9
    assert _run(server, "after")[0] == 0


def test_a_server_that_cannot_import_the_app_says_why(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text("import a_library_nobody_installed\n")
    forks = ForkServer(Path(sys.executable), app, dict(os.environ), tmp_path / "runs")
    try:
        with pytest.raises(
            RuntimeError, match=r"(?s)the fork server ended: .*No module named 'a_library_nobody_installed'"
        ):
            _run(forks, "one")
    finally:
        forks.close()
