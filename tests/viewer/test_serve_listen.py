"""``loom-otel serve`` says where it serves only once it listens (issue 43): a port another process holds
is an error said plainly (exit 1), with no announcement first; a free port is announced, and answers;
``--port 0`` is announced as the port bound. One worker or two (each then on a socket of its own)."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

SERVE = [sys.executable, "-m", "loom_otel.cli", "serve"]


def _common(tmp_path: Path) -> list[str]:
    (tmp_path / "journal").mkdir(exist_ok=True)
    (tmp_path / "tokens.toml").write_text('[tokens]\nalice = "alice-secret-token-0000"\n')
    store = f"file://{tmp_path / 'store'}"
    return [*SERVE, "--journal", str(tmp_path / "journal"), "--store", store, "--tokens", str(tmp_path / "tokens.toml")]


@pytest.mark.parametrize(("workers", "shared"), [(1, False), (2, False), (2, True)])
def test_a_port_in_use_is_an_error_and_never_announced(tmp_path: Path, workers: int, shared: bool) -> None:
    """``shared``: the port is held by a socket that would share it (``SO_REUSEPORT``, as another
    ``serve`` holds it): still in use."""
    with socket.socket() as held:
        if shared:
            held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run(
            [*_common(tmp_path), "--port", str(port), "--workers", str(workers)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "loom-otel serve: http" not in done.stdout
    assert f"cannot listen on http://127.0.0.1:{port}/" in done.stderr and "in use" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("workers", "chosen"), [(1, False), (2, False), (1, True), (2, True)])
def test_the_announcement_comes_once_listening(tmp_path: Path, workers: int, chosen: bool) -> None:
    """Announced once a worker accepts connections; ``chosen``: ``--port 0``, announced as the port bound."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    served = subprocess.Popen(
        [*_common(tmp_path), "--port", "0" if chosen else str(port), "--workers", str(workers)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert served.stdout is not None
        line = served.stdout.readline()  # blocks until the announcement (or the end)
        if chosen:
            found = re.match(r"loom-otel serve: http://127\.0\.0\.1:(\d+)/", line)
            assert found is not None and int(found[1]) > 0, line + served.stderr.read()
            port = int(found[1])
        assert line.startswith(f"loom-otel serve: http://127.0.0.1:{port}/"), line + served.stderr.read()
        deadline = time.monotonic() + 5
        while True:  # listening when announced: the first connection is accepted (a short grace on a busy host)
            try:
                response = httpx2.get(f"http://127.0.0.1:{port}/", timeout=30)
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert response.status_code == 404  # no token: the same 404 as everything else
    finally:
        served.terminate()
        assert served.wait(30) in {0, -signal.SIGTERM}  # stopped when asked (uvicorn alone: by the signal)
    with pytest.raises(httpx2.TransportError):  # every worker with it
        httpx2.get(f"http://127.0.0.1:{port}/", timeout=5)
