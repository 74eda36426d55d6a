"""The main job: ``loom-otel demo`` on the embedded defaults, as the README runs it."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loom_otel.core import FileReasoningStore
from loom_otel.core._journal._reader import iter_records

# How the README's install runs it (the venv's script, the venv not activated), and as a module.
LAUNCHERS = {
    "script": [str(Path(sys.executable).parent / "loom-otel")],
    "module": [sys.executable, "-m", "loom_otel.cli"],
}


@pytest.mark.slow
@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_demo_runs_end_to_end_without_network_or_key(tmp_path, launcher):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # the venv is not on the PATH
    if "PYTHONPATH" in os.environ:  # a checkout run against a shared venv: its own sources first
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
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

    # The closing command serves what the demo captured; the printed page opens with the printed token.
    viewer = out.split("Open the reasoning behind a trace in a browser")[1].splitlines()
    command, opening = viewer[1].strip(), viewer[2].strip()
    page, token = re.fullmatch(r"then open (\S+) and sign in as alice with the token (\S+)", opening).groups()
    assert page.startswith("http://127.0.0.1:8377/executions/demo-anthropic?tenant=acme&step=")
    port = _free_port()
    served = subprocess.Popen(shlex.split(command.replace("--port 8377", f"--port {port}")), env=env)
    try:
        import httpx2

        url = page.replace(":8377/", f":{port}/")
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx2.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=5)
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline, "loom-otel serve did not start"
                time.sleep(0.3)
        assert response.status_code == 200 and "Untrusted model output" in response.text
        assert httpx2.get(url, timeout=5).status_code == 404  # without the token: nothing
    finally:
        served.terminate()
        served.wait(20)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
