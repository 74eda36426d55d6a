"""Issue 31: the chained exporter with its default inner exporter (OTLP/HTTP) and no collector
running. Exit is bounded (it took 50-65 s with 15-24 "Transient error" lines), says in one line which
endpoint did not answer and how to send what is owed later, and leaves that in the journal, from where
``loom-otel forward`` delivers all of it once a collector runs. An inner exporter nothing registers is
a configuration error naming the variable, the value and what is allowed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

import pytest

from loom_otel.audit import verify
from loom_otel.core._evidence._journal._checkpoint import generate_key
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.testing.simulator import Simulator, serve
from tests.support.instrumentors import only_loom_instrumentations

from .receiver import Receiver, free_port

pytestmark = pytest.mark.slow
APP = Path(__file__).with_name("exit_app.py")
CANARY = "CANARY-no-collector-9b2e"
EXIT_BOUND = 20.0
"""Seconds from the app's last line to its end: generous for a busy machine (before: 50-65 s)."""


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOM_OTEL_", "OTEL_"))}
    key = tmp_path / "checkpoint.pem"
    if not key.exists():
        generate_key(key)  # signed checkpoints: no "unsigned" warning on stderr
    env.update(
        only_loom_instrumentations(),
        PYTHONPATH=os.pathsep.join([str(Path.cwd()), *sys.path]),
        ANTHROPIC_API_KEY="sim",
        OTEL_TRACES_EXPORTER="loom_chain",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_BSP_SCHEDULE_DELAY="60000",  # nothing is exported before the exit
        LOOM_OTEL_REASONING_STORE=f"file://{tmp_path / 'store'}",
        LOOM_OTEL_CHECKPOINT_KEY=str(key),
        **extra,
    )
    return env


def run_instrumented(tmp_path: Path, env: dict[str, str], ending: str, rounds: int = 1) -> tuple[int, str, str, float]:
    """Run the app (``rounds`` of five calls) under ``opentelemetry-instrument``; its exit code, stdout,
    stderr, and the seconds from its last line (or the ``SIGTERM``) to its end."""
    instrument = Path(sys.executable).with_name("opentelemetry-instrument")
    args = [str(instrument), sys.executable, str(APP), str(rounds), "wait" if ending == "sigterm" else "exit"]
    with serve(Simulator(reasoning_text=CANARY)) as server:
        proc = subprocess.Popen(
            args,
            cwd=tmp_path,
            env={**env, "ANTHROPIC_BASE_URL": server.url},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        first = proc.stdout.readline()
        started = time.monotonic()
        if ending == "sigterm" and first == "done\n":
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=180)
        return proc.returncode, first + out, err, time.monotonic() - started


@pytest.mark.parametrize("ending", ["exit", "sigterm"])
def test_exit_with_no_collector_is_bounded_and_says_so_once(ending: str, receiver: Receiver, tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    env = environment(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint)
    code, out, err, seconds = run_instrumented(tmp_path, env, ending)
    assert out == "done\n", err
    assert code == (-signal.SIGTERM if ending == "sigterm" else 0), err
    assert seconds < EXIT_BOUND, (seconds, err)
    journal = tmp_path / "store" / "journal"
    assert err.splitlines() == [
        f"loom-otel: the collector at {endpoint}/v1/traces is unreachable; the audit records owed stay in "
        f"the journal: send them with `loom-otel forward {journal}`"
    ]
    # what is owed stayed in the journal: the way out delivers all of it once a collector runs
    receiver.start()
    forward = receiver.forward(journal, env)
    assert forward.returncode == 0, forward.stderr
    records = list(iter_records(journal))
    assert sum(1 for r in records if r["type"] == "capture") == 5
    (origin,) = verify(receiver.path).origins
    assert origin.records == max(r["seq"] for r in records) and origin.gaps == () and origin.unanchored is None
    assert CANARY not in receiver.path.read_text() + out + err


def test_an_unknown_inner_exporter_is_a_configuration_error(tmp_path: Path) -> None:
    env = environment(
        tmp_path, LOOM_OTEL_CHAIN_INNER="banana", OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{free_port()}"
    )
    code, out, err, seconds = run_instrumented(tmp_path, env, "exit")
    # opentelemetry-instrument would run the app untraced: its first model call raises instead (core/_runtime/_zero_code)
    assert code != 0 and out == "" and err.count("Traceback") == 1
    told = "LOOM_OTEL_CHAIN_INNER='banana' names no registered span exporter; allowed: "
    assert err.splitlines()[0].startswith(f"loom-otel: {told}")  # one line at start-up
    assert err.splitlines()[-1].startswith(f"loom_otel.core.exceptions.ReasoningConfigError: {told}")
    assert "otlp_proto_http" in err and "Transient error" not in err and seconds < EXIT_BOUND


MANY_CALLS_BOUND: Final = 8.0
"""Seconds from the last line of a many-call app to its end: "a few seconds" on a busy machine (issue
43: a two-call tool loop took 15-17 s; a one-call app ~2.4 s)."""


def test_a_many_call_app_exits_in_seconds_and_says_so_once(receiver: Receiver, tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    # spans exported while the app runs: each send finds the collector absent, in one refused connection
    env = {**environment(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint), "OTEL_BSP_SCHEDULE_DELAY": "100"}
    code, out, err, seconds = run_instrumented(tmp_path, env, "exit", rounds=4)
    assert (code, out) == (0, "done\n"), err
    assert seconds < MANY_CALLS_BOUND, (seconds, err)
    journal = tmp_path / "store" / "journal"
    assert err.splitlines() == [
        f"loom-otel: the collector at {endpoint}/v1/traces is unreachable; the audit records owed stay in "
        f"the journal: send them with `loom-otel forward {journal}`"
    ]
    receiver.start()  # nothing was lost: the way out delivers every capture
    forward = receiver.forward(journal, env)
    assert forward.returncode == 0, forward.stderr
    records = list(iter_records(journal))
    assert sum(1 for r in records if r["type"] == "capture") == 20
    (origin,) = verify(receiver.path).origins
    assert origin.records == max(r["seq"] for r in records) and origin.gaps == ()
    assert CANARY not in receiver.path.read_text() + out + err
