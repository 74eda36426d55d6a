"""Runs one framework app again and again, each run in a process forked from one that imported the
app's libraries once: the matrix's bare runs (the app alone, no OpenTelemetry), where importing the
framework and its SDK is most of a run's CPU. The instrumented runs never come from here: they start
as users start them, under ``opentelemetry-instrument``.

Started by tests/frameworks/harness.py with the app's path, in the framework's venv (standard library
only). It reads one JSON request a line on stdin (``id``, ``env``, ``stdout``, ``stderr``, ``timeout``)
and answers ``<id> <exit code>`` a line on stdout when that run has ended; end of input ends it.
"""

from __future__ import annotations

import ast
import importlib
import itertools
import json
import os
import runpy
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, NoReturn


def _libraries(script: str) -> list[str]:
    """The modules the app imports, anywhere in it, but its own (``_conversation`` reads the run's
    environment when imported)."""
    here = os.path.dirname(script)
    with open(script, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return [
        name
        for name in dict.fromkeys(names)
        if name != "__future__" and not os.path.exists(os.path.join(here, name.partition(".")[0] + ".py"))
    ]


def _app(script: str, request: dict[str, Any]) -> NoReturn:
    """The run itself: the app as ``python app.py`` runs it, in the request's environment and files.
    Its exit, exception or not, is the interpreter's own (threads joined, ``atexit`` run)."""
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the process's stdin until it exits
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [script]  # sys.path[0] is the app's directory already (main)
    runpy.run_path(script, run_name="__main__")
    sys.exit(0)


def _supervise(script: str, request: dict[str, Any]) -> NoReturn:
    """Between the server and the run: forks the run, kills it at its timeout, reports how it ended."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    run = os.fork()
    if run == 0:
        _app(script, request)
    signal.signal(signal.SIGALRM, lambda *_: os.kill(run, signal.SIGKILL))
    signal.alarm(int(request["timeout"]))
    _, status = os.waitpid(run, 0)
    os.write(1, f"{request['id']} {os.waitstatus_to_exitcode(status)}\n".encode())
    os._exit(0)


def main() -> None:
    script = os.path.abspath(sys.argv[1])
    sys.path[0] = os.path.dirname(script)
    for name in _libraries(script):
        importlib.import_module(name)
    if threading.active_count() != 1:
        sys.exit(f"the app's libraries started threads when imported, and a fork keeps none: {threading.enumerate()}")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the supervisors are reaped as they end
    os.write(1, b"ready\n")
    for line in sys.stdin:
        request = json.loads(line)
        if os.fork() == 0:
            _supervise(script, request)


class ForkServer:
    """The harness's side: the server of one app, whose runs any thread may ask for."""

    def __init__(self, python: Path, script: Path, env: Mapping[str, str], workdir: Path) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self._workdir = workdir
        self._log = workdir / "server.stderr"
        self._args = [str(python), str(script)]
        """What a run stands for: ``python app.py`` in the app's venv."""
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(
                [str(python), __file__, str(script)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=dict(env),
            )
        self._lock = threading.Lock()
        self._numbers = itertools.count()
        self._running: dict[int, Future[int]] | None = {}
        threading.Thread(target=self._read, name=f"forkserver {script.name}", daemon=True).start()

    def run(self, env: Mapping[str, str], timeout: int) -> subprocess.CompletedProcess[str]:
        """One run of the app, as ``subprocess.run([python, app], env=env, capture_output=True, text=True)``."""
        number = next(self._numbers)
        stdout, stderr = self._workdir / f"{number}.stdout", self._workdir / f"{number}.stderr"
        request = {"id": number, "env": dict(env), "stdout": str(stdout), "stderr": str(stderr), "timeout": timeout}
        ended: Future[int] = Future()
        with self._lock:
            if self._running is None or self._process.stdin is None:
                raise RuntimeError(self._gone())
            self._running[number] = ended
            try:
                self._process.stdin.write(json.dumps(request).encode() + b"\n")
                self._process.stdin.flush()
            except BrokenPipeError:
                raise RuntimeError(self._gone()) from None
        code = ended.result(timeout=timeout + 60)
        return subprocess.CompletedProcess(self._args, code, stdout.read_text(), stderr.read_text())

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=60)

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            number, _, code = line.decode().partition(" ")
            if number.isdigit():
                with self._lock:
                    assert self._running is not None
                    self._running.pop(int(number)).set_result(int(code))
        with self._lock:
            running, self._running = self._running or {}, None
        for ended in running.values():
            ended.set_exception(RuntimeError(self._gone()))

    def _gone(self) -> str:
        return f"the fork server ended: {self._log.read_text(errors='replace')[-3000:]}"


if __name__ == "__main__":
    main()
