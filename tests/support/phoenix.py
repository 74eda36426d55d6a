"""One Arize Phoenix server for every test that sends it spans (tests/e2e_trail/test_phoenix*.py,
tests/viewer/test_browser.py, tests/viewer/test_phoenix_click.py; one xdist worker runs them all,
tests/support/xdist_groups.py).

Phoenix takes minutes to start on a busy machine, so it is started once per session (``phoenix``), each
test writing to a project of its own. Its working directory and log are in a directory of their own
outside pytest's temporary folders (which other runs on the same machine prune): when Phoenix does not
start, the failure says "Phoenix did not start", where its log is, and the log's tail; the directory is
kept. After a session that started it, the directory is removed."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from tests.support.ports import free_port

ROOT: Final = Path(__file__).resolve().parents[2]
START_TIMEOUT: Final = 300.0
"""Seconds Phoenix may take to answer (minutes on a busy 2-core machine)."""
LOG_TAIL: Final = 4000
"""Characters of Phoenix's log quoted when it did not start."""


@dataclass(frozen=True, slots=True)
class PhoenixServer:
    """A running Phoenix: its REST base URL, its OTLP gRPC port, its working directory and its log."""

    base: str
    grpc_port: int
    home: Path
    log: Path


def phoenix_executable() -> str | None:
    configured = os.environ.get("LOOM_OTEL_TEST_PHOENIX")
    candidates = [configured] if configured else []
    candidates.append(str(ROOT / ".ci" / ".cache" / "phoenix-venv" / "bin" / "phoenix"))
    return next((c for c in candidates if c and Path(c).is_file()), None)


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as exc:  # the server is still starting
            last = exc
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what} ({last!r})")


def _tail(log: Path) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"(no log: {exc})"
    return text[-LOG_TAIL:] or "(the log is empty)"


def _did_not_start(log: Path, why: str) -> None:
    pytest.fail(f"Phoenix did not start ({why}); its log is {log}; its tail:\n{_tail(log)}", pytrace=False)


@contextlib.contextmanager
def running_phoenix(
    exe: str | None = None, *, timeout: float = START_TIMEOUT, home: Path | None = None
) -> Iterator[PhoenixServer]:
    """``phoenix serve`` on loopback ports, its database and log in ``home`` (default: a new directory
    of its own, removed afterwards unless Phoenix did not start)."""
    exe = exe or phoenix_executable()
    if exe is None:
        pytest.skip("Arize Phoenix is not installed (.ci/install-e2e.sh, or LOOM_OTEL_TEST_PHOENIX)")
    own = home is None
    home = home if home is not None else Path(tempfile.mkdtemp(prefix="loom-otel-phoenix-"))
    log = home / "phoenix.log"
    http_port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(home / "phoenix"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(http_port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    started = False
    with log.open("wb") as out:
        proc = subprocess.Popen([exe, "serve"], env=env, stdout=out, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{http_port}"
        try:
            deadline = time.monotonic() + timeout
            while not started:
                if proc.poll() is not None:
                    _did_not_start(log, f"it exited with code {proc.returncode}")
                if time.monotonic() > deadline:
                    _did_not_start(log, f"no answer from {base}/v1/projects within {timeout:.0f} s")
                try:
                    started = get_json(f"{base}/v1/projects") is not None
                except (OSError, ValueError):  # still starting
                    time.sleep(0.5)
            yield PhoenixServer(base, grpc_port, home, log)
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(15)
    if own and started:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def phoenix() -> Iterator[PhoenixServer]:
    """The session's one Phoenix (started by the first test that asks for it)."""
    with running_phoenix() as server:
        yield server
