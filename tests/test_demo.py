"""The main job: ``loom-otel demo`` on the embedded defaults, as the README runs it, and every command it
prints run as printed: in this suite's venv, and in a venv made by the README's first command alone."""

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
from loom_otel.core._evidence._journal._reader import iter_records
from tests.support.trust_store import machine_environment

ROOT = Path(__file__).resolve().parents[1]

# How the README's install runs it (the venv's script, the venv not activated), and as a module.
LAUNCHERS = {
    "script": [str(Path(sys.executable).parent / "loom-otel")],
    "module": [sys.executable, "-m", "loom_otel.cli"],
}


def _demo(launcher: list[str], where: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [*launcher, "demo", "--dir", str(where)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _printed_commands(out: str, launcher: list[str]) -> list[str]:
    """Every command the demo printed (an indented line that runs this loom-otel), in order."""
    program = shlex.join(launcher)
    return [line.strip() for line in out.splitlines() if line.startswith("  ") and program in line]


def _split(command: str) -> tuple[dict[str, str], list[str]]:
    """``VAR=value ... argv`` as printed: the assignments and the argv."""
    words = shlex.split(command)
    assignments = {}
    while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
        name, value = words.pop(0).split("=", 1)
        assignments[name] = value
    return assignments, words


def _run_printed(out: str, launcher: list[str], env: dict[str, str]) -> dict[str, str]:
    """Run every printed command as printed (``serve``: start it, open the printed page with the printed
    token, stop it); the output of each, by its subcommand."""
    commands = _printed_commands(out, launcher)
    ran: dict[str, str] = {}
    for command in commands:
        assignments, argv = _split(command)
        subcommand = " ".join(argv[len(launcher) : len(launcher) + 2])
        if argv[len(launcher)] == "serve":
            ran["serve"] = _serve(out, argv, {**env, **assignments})
            continue
        done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120, check=False, env=env)
        assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
        ran[subcommand if argv[len(launcher)] == "audit" else argv[len(launcher)]] = done.stdout
    return ran


def _serve(out: str, argv: list[str], env: dict[str, str]) -> str:
    opening = re.search(r"then open (\S+) and sign in as alice with the token (\S+)", out)
    assert opening is not None, out
    page, token = opening.groups()
    assert page.startswith("http://127.0.0.1:8377/executions/demo-anthropic?tenant=acme&step=")
    port = _free_port()
    argv = [str(port) if word == "8377" else word for word in argv]
    served = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        import httpx2

        url = page.replace(":8377/", f":{port}/")
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx2.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=10)
                break
            except httpx2.TransportError:
                assert served.poll() is None, served.communicate()
                assert time.monotonic() < deadline, "loom-otel serve did not start"
                time.sleep(0.3)
        assert response.status_code == 200 and "Untrusted model output" in response.text
        assert httpx2.get(url, timeout=10).status_code == 404  # without the token: nothing
    finally:
        served.terminate()
        said, errors = served.communicate(timeout=30)
    assert f"loom-otel serve: http://127.0.0.1:{port}/" in said, said + errors
    return said


def _check_printed_commands(out: str, ran: dict[str, str], text: bytes) -> None:
    assert list(ran) == ["audit list", "audit show", "serve", "erase", "verify"]
    assert re.search(r"demo-anthropic\s+acme\s+3\s+3\s+3\s+3 ok", ran["audit list"]), ran["audit list"]
    assert re.search(r"demo-gemini\s+acme\s+2\s+2\s+2\s+2 ok", ran["audit list"]), ran["audit list"]
    assert "execution demo-anthropic (tenant acme): 3 steps, 3 parts" in ran["audit show"]
    assert text.decode() in ran["audit show"]  # --text: the hint reads the reasoning back
    assert "erased 2 blob(s) of execution 'demo-gemini' (tenant 'acme')" in ran["erase"]
    # after a page view and an erasure, the journal still verifies against the archive, signed
    verified = ran["verify"]
    assert verified.splitlines()[-1].startswith("OK: every chain is whole"), verified
    assert "local origin" in verified and "origin only in the source" not in verified


@pytest.mark.slow
@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_demo_runs_end_to_end_without_network_or_key(tmp_path, launcher):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # the venv is not on the PATH
    if "PYTHONPATH" in os.environ:  # a checkout run against a shared venv: its own sources first
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    out = _demo(LAUNCHERS[launcher], tmp_path, env)
    assert "without loom-otel the vendor answers: 400" in out and "with loom-otel: accepted" in out
    assert "loom.reasoning.dropped reason=prefix_changed" in out
    assert out.count(": ok") == 2  # journal and archive verify, signed checkpoints required
    # The readable reasoning is in the store and nowhere else the demo wrote.
    store = FileReasoningStore(tmp_path / "store")
    journal = tmp_path / "store" / "journal"  # where every command finds it, beside the file store
    record = next(r for r in iter_records(journal) if r["type"] == "capture")
    attributes = record["attributes"]
    text = store.get(
        attributes["loom.reasoning.part.ref"][0], tenant="acme", execution_id=attributes["loom.execution.id"]
    )
    assert text
    for path in [tmp_path / "collector" / "traces.jsonl", *journal.rglob("*.jsonl")]:
        assert text not in path.read_bytes(), path
    assert text.decode() not in out

    # The numbers agree: the model calls the demo says it made are the steps the audit table shows.
    counts = re.findall(r"(\d+) model calls made, (\d+) captured: (\d+) steps", out)
    assert counts == [("3", "3", "3"), ("2", "2", "2")], out
    for execution_id, steps in (("demo-anthropic", 3), ("demo-gemini", 2)):
        section = out.split(f"execution_id={execution_id!r}")[1].split("\n==")[0]
        assert len(re.findall(r"^[0-9a-f]{16}  ", section, re.MULTILINE)) == steps

    # Every command it prints works as printed, with the same environment.
    _check_printed_commands(out, _run_printed(out, LAUNCHERS[launcher], env), text)


def _readme_install() -> list[str]:
    """The ``pip install`` arguments of the README's first command ("Two commands")."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Two commands")[1]
    command = section.split("```bash\n")[1].split("\n")[0]
    found = re.search(r"\.venv/bin/pip install (.+?) &&", command)
    assert found is not None and command.startswith("python3 -m venv .venv &&"), command
    return shlex.split(found.group(1))


def _venv_as_the_readme_makes_it(where: Path) -> Path:
    """A new venv holding only what the README's first command installs (with uv when CI has it:
    the same requirements, resolved in seconds; else with pip, as the README does)."""
    install = _readme_install()
    uv = ROOT / ".ci" / ".cache" / "uv" / "bin" / "uv"
    python = where / "bin" / "python"
    steps = (
        [[str(uv), "venv", "-q", "--python", sys.executable, str(where)], [str(uv), "pip", "install", "-q"]]
        if uv.exists()
        else [[sys.executable, "-m", "venv", str(where)], [str(python), "-m", "pip", "install", "-q"]]
    )
    env = machine_environment({k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "VIRTUAL_ENV"))})
    subprocess.run(steps[0], check=True, timeout=300, env=env, cwd=ROOT)
    extra = ["--python", str(python)] if uv.exists() else []
    done = subprocess.run(
        [*steps[1], *extra, *install], capture_output=True, text=True, timeout=1200, env=env, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return where


@pytest.mark.slow
def test_every_printed_command_works_in_a_venv_made_by_the_readme_alone(tmp_path):
    venv = _venv_as_the_readme_makes_it(tmp_path / ".venv")
    launcher = [str(venv / "bin" / "loom-otel")]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no PYTHONPATH: only what the venv holds
    out = _demo(launcher, tmp_path / "demo", env)
    store = FileReasoningStore(tmp_path / "demo" / "store")
    record = next(r for r in iter_records(tmp_path / "demo" / "store" / "journal") if r["type"] == "capture")
    attributes = record["attributes"]
    text = store.get(
        attributes["loom.reasoning.part.ref"][0], tenant="acme", execution_id=attributes["loom.execution.id"]
    )
    _check_printed_commands(out, _run_printed(out, launcher, env), text)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
