"""``loom-otel serve --workers 2`` as a person starts it: both workers answer, each writes its own chain of
read records (verify passes over them), and a restart reuses the persisted capture index, in which a
capture made while the viewer was down appears."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest

from loom_otel.audit._index import index_path_for
from loom_otel.core import ReasoningConfig
from loom_otel.viewer._reads import read_records
from tests.e2e_trail.receiver import free_port
from tests.viewer.conftest import BOB_TEXT, CANARY, Captured, bearer, capture_run, without_reads

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
LATE = "CANARY-viewer-late-5e0c reasoning captured while the viewer was down"


@contextlib.contextmanager
def _serving(captured: Captured, port: int, workers: int) -> Iterator[str]:
    command = [
        sys.executable, "-m", "loom_otel.cli", "serve", "--journal", str(captured.journal),
        "--store", captured.store_url, "--tokens", str(captured.tokens), "--policy", str(captured.policy),
        "--reads-journal", str(captured.root / "reads"), "--port", str(port), "--workers", str(workers),
    ]  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=os.environ)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx2.get(f"{base}/signin", timeout=5).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "loom-otel serve did not start"
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


def _origins(captured: Captured) -> set[str]:
    return {r.origin for r in read_records(captured.root / "reads") if r.reader == "alice"}


def test_two_workers_answer_and_each_chains_its_reads_and_a_restart_reuses_the_index(captured: Captured) -> None:
    port = free_port()
    api = "/api/executions/run-alice?tenant=acme&step=s0"
    with _serving(captured, port, workers=2) as base:

        def read(_: int) -> str:
            with httpx2.Client(base_url=base, timeout=60) as client:  # a connection of its own
                answer = client.get(api, headers=bearer("alice"))
                assert answer.status_code == 200
                return without_reads(answer.json())

        answers: set[str] = set()
        with ThreadPoolExecutor(8) as pool:
            for _ in range(20):  # until both workers have answered (each accepts on the shared socket)
                answers |= set(pool.map(read, range(16)))
                if len(_origins(captured)) >= 2:
                    break
        assert len(answers) == 1 and CANARY in next(iter(answers))
        assert httpx2.get(f"{base}{api}", headers=bearer("bob"), timeout=30).status_code == 404
    assert len(_origins(captured)) == 2  # one chain per worker process
    verified = subprocess.run(
        [sys.executable, "-m", "loom_otel.cli", "verify", str(captured.root / "reads")],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr

    index = index_path_for(captured.journal.absolute())
    made = index.stat().st_ino
    config = ReasoningConfig(store=captured.store_url, journal=captured.journal)
    capture_run(config, LATE, "run-late", principal="alice")  # while the viewer is down
    with _serving(captured, port, workers=2) as base:
        listing = httpx2.get(f"{base}/", headers=bearer("alice"), timeout=60)
        assert listing.status_code == 200 and "run-late" in listing.text and "run-bob" not in listing.text
        late = httpx2.get(f"{base}/api/executions/run-late?tenant=acme", headers=bearer("alice"), timeout=60)
        assert late.status_code == 200 and LATE in late.text and BOB_TEXT not in late.text
    assert index.stat().st_ino == made  # the same file, brought up to date: not made again
