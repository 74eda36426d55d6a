"""DESIGN "Failure policy" under zero code: ``opentelemetry-instrument`` catches an instrumentor's
exception and runs the application without it, so an invalid ``LOOM_OTEL_*`` value is not raised at
start-up but told in one line, and every model call raises it (``core/_runtime/_zero_code``). Unknown
``LOOM_OTEL_*`` names warn, naming the closest known one; a process hears only about the SDKs it uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.instrumentation.auto_instrumentation._load import _load_instrumentors
from opentelemetry.instrumentation.distro import BaseDistro

from loom_otel.core import LoomOtelWarning, ReasoningConfigError, Runtime
from loom_otel.core._runtime._config import reset_runtime
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator
from tests.support.instrumentors import only_loom_instrumentations, uninstrument_every_loom_instrumentor

from .zero_code_app import CLAUDE

APP = Path(__file__).with_name("zero_code_app.py")
ROOT = Path(__file__).resolve().parents[2]


def run_app(tmp_path: Path, mode: str, environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``opentelemetry-instrument python zero_code_app.py MODE`` with only loom-otel's instrumentors
    (the test venv also holds other GenAI instrumentations, which import the SDKs at start-up)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOM_OTEL_", "OTEL_"))}
    env.update(
        only_loom_instrumentations(),
        OTEL_TRACES_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        XDG_STATE_HOME=str(tmp_path / "state"),
        PYTHONPATH=str(ROOT),
    )
    env.update(environ)
    instrument = Path(sys.executable).with_name("opentelemetry-instrument")
    return subprocess.run(
        [str(instrument), sys.executable, str(APP), mode],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def invalid_configurations(tmp_path: Path) -> dict[str, tuple[dict[str, str], str, str, str]]:
    """Per case: the environment, and what the error must name: the variable, the value, what is allowed."""
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    store = {"LOOM_OTEL_REASONING_STORE": "memory:"}
    return {
        "transcript": (
            {"LOOM_OTEL_REASONING_TRANSCRIPT": "redacted", **store},
            "LOOM_OTEL_REASONING_TRANSCRIPT",
            "'redacted'",
            "keep, redact",
        ),
        "durability": (
            {"LOOM_OTEL_JOURNAL_DURABILITY": "never", **store},
            "LOOM_OTEL_JOURNAL_DURABILITY",
            "'never'",
            "always, batch, os",
        ),
        "retention": ({"LOOM_OTEL_RETENTION": "forever", **store}, "LOOM_OTEL_RETENTION", "'forever'", "30d"),
        "digest": ({"LOOM_OTEL_DIGEST": "md5", **store}, "LOOM_OTEL_DIGEST", "'md5'", "sha256, hmac-sha256"),
        "request readable": (
            {"LOOM_OTEL_REQUEST_READABLE": "yes", **store},
            "LOOM_OTEL_REQUEST_READABLE",
            "'yes'",
            "off, summarized",
        ),
        "checkpoint key": (
            {"LOOM_OTEL_CHECKPOINT_KEY": str(tmp_path / "no-key.pem"), **store},
            "LOOM_OTEL_CHECKPOINT_KEY",
            "no-key.pem",
            "Ed25519 private key file",
        ),
        "journal path": (
            {"LOOM_OTEL_AUDIT_JOURNAL": "journal/here", **store},
            "LOOM_OTEL_AUDIT_JOURNAL",
            "'journal/here'",
            "an absolute path",
        ),
        "fsync": (
            {"LOOM_OTEL_STORE_FSYNC": "sometimes", **store},
            "LOOM_OTEL_STORE_FSYNC",
            "'sometimes'",
            "true or false",
        ),
        "chain inner": (
            {"LOOM_OTEL_CHAIN_INNER": "otlp", **store},
            "LOOM_OTEL_CHAIN_INNER",
            "'otlp'",
            "otlp_proto_http",
        ),
        "store is a file": (
            {"LOOM_OTEL_REASONING_STORE": str(a_file)},
            "LOOM_OTEL_REASONING_STORE",
            str(a_file),
            "file:///",
        ),
    }


CASES = [
    "transcript",
    "durability",
    "retention",
    "digest",
    "request readable",
    "checkpoint key",
    "journal path",
    "fsync",
    "chain inner",
    "store is a file",
]


def startup_of(done: subprocess.CompletedProcess[str]) -> list[str]:
    """What the process printed to stderr before the application's own uncaught exception."""
    lines = done.stderr.splitlines()
    end = next((i for i, line in enumerate(lines) if line.startswith("Traceback")), len(lines))
    return lines[:end]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_an_invalid_value_under_zero_code_fails_the_first_model_call_in_one_line(tmp_path: Path, case: str) -> None:
    environ, name, value, allowed = invalid_configurations(tmp_path)[case]
    if case == "chain inner":  # read by the chained exporter, built before the instrumentors
        environ = {**environ, "OTEL_TRACES_EXPORTER": "loom_chain"}
    done = run_app(tmp_path, "one-call", environ)
    assert done.returncode != 0 and "returned" not in done.stdout  # the application stopped at its call
    assert done.stdout.startswith("started")
    error = done.stderr.strip().splitlines()[-1]  # the application's uncaught exception
    assert error.startswith("loom_otel.core.exceptions.ReasoningConfigError: "), done.stderr
    for part in (name, value, allowed):
        assert part in error, (part, error)
    told = startup_of(done)
    assert len(told) == 1 and name in told[0] and "every model call raises" in told[0], done.stderr  # no traceback
    assert done.stderr.count("Traceback") == 1  # the application's own


@pytest.mark.slow
def test_every_call_mode_of_every_sdk_raises_before_anything_is_sent(tmp_path: Path) -> None:
    done = run_app(
        tmp_path, "every-mode", {"LOOM_OTEL_REASONING_TRANSCRIPT": "redacted", "LOOM_OTEL_REASONING_STORE": "memory:"}
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert report["requests"] == 0  # nothing reached the vendor
    assert len(report["outcomes"]) == 14
    for mode, outcome in report["outcomes"].items():
        assert outcome is not None, mode
        kind, message = outcome
        assert kind == "ReasoningConfigError", (mode, outcome)
        assert "\n" not in message and "LOOM_OTEL_REASONING_TRANSCRIPT='redacted'" in message, (mode, message)
        assert "keep, redact" in message
    assert "Traceback" not in done.stderr
    assert "CANARY-zero-code-5c1" not in done.stdout + done.stderr


@pytest.mark.slow
def test_a_valid_configuration_under_zero_code_still_captures(tmp_path: Path) -> None:
    done = run_app(tmp_path, "one-call", {"LOOM_OTEL_REASONING_STORE": f"file://{tmp_path}/store"})
    assert done.returncode == 0, done.stderr
    assert "returned" in done.stdout and "Traceback" not in done.stderr
    assert list((tmp_path / "store" / "journal").iterdir())  # captured: the journal beside the store


class LoomAnthropicOnly(BaseDistro):
    """A distro for the real auto-instrumentation loader, in process: it loads ``loom_anthropic`` only."""

    def _configure(self, **kwargs: Any) -> None:
        pass

    def load_instrumentor(self, entry_point: Any, **kwargs: Any) -> None:
        if entry_point.name == "loom_anthropic":
            super().load_instrumentor(entry_point, **kwargs)


def test_the_loader_gets_no_exception_and_the_model_calls_raise_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("LOOM_OTEL_REASONING_STORE", "memory:")
    monkeypatch.setenv("LOOM_OTEL_REASONING_TRANSCRIPT", "redacted")
    sim = Simulator(reasoning_text="CANARY-zero-code-in-process")
    reset_runtime()
    try:
        _load_instrumentors(LoomAnthropicOnly())  # what opentelemetry-instrument's sitecustomize runs
        assert AnthropicInstrumentor().is_instrumented_by_opentelemetry
        for _ in range(2):
            with pytest.raises(ReasoningConfigError) as info:
                sim.anthropic_client().messages.create(**CLAUDE)
            assert str(info.value) == (
                "LOOM_OTEL_REASONING_TRANSCRIPT='redacted' is not valid; allowed: keep, redact "
                "(loom-otel refuses model calls until it is fixed)"
            )
        with pytest.raises(ReasoningConfigError, match="'redacted'"), sim.anthropic_client().messages.stream(**CLAUDE):
            pass
        assert sim.requests == []  # nothing was sent
    finally:
        # the loader's post-instrument hook (``_auto``) instruments every loom-otel instrumentor it skipped:
        # none stays wrapped (refusing) for the tests after this one
        uninstrument_every_loom_instrumentor()
    told = [r.getMessage() for r in caplog.records if "LOOM_OTEL_REASONING_TRANSCRIPT" in r.getMessage()]
    assert told == [
        "loom-otel: LOOM_OTEL_REASONING_TRANSCRIPT='redacted' is not valid; allowed: keep, redact; "
        "every model call raises ReasoningConfigError until it is fixed"
    ]
    assert sim.anthropic_client().messages.create(**CLAUDE).content  # unwrapped again


def test_instrument_called_by_code_still_raises() -> None:
    with pytest.raises(ReasoningConfigError, match="LOOM_OTEL_REASONING_TRANSCRIPT='redacted'"):
        with instrumented(
            AnthropicInstrumentor(),
            environ={"LOOM_OTEL_REASONING_TRANSCRIPT": "redacted", "LOOM_OTEL_REASONING_STORE": "memory:"},
        ):
            pass
    assert not AnthropicInstrumentor().is_instrumented_by_opentelemetry


@pytest.mark.parametrize(
    ("unknown", "meant"),
    [
        ("LOOM_OTEL_REDACT", "LOOM_OTEL_REASONING_TRANSCRIPT"),
        ("LOOM_OTEL_STORE", "LOOM_OTEL_REASONING_STORE"),
        ("LOOM_OTEL_REASONING_STOR", "LOOM_OTEL_REASONING_STORE"),
        ("LOOM_OTEL_JOURNAL_DURABILTY", "LOOM_OTEL_JOURNAL_DURABILITY"),
        ("LOOM_OTEL_CHAIN_INER", "LOOM_OTEL_CHAIN_INNER"),
    ],
)
def test_an_unknown_variable_warns_once_naming_the_closest_known_one(unknown: str, meant: str) -> None:
    with pytest.warns(LoomOtelWarning) as caught:
        Runtime.resolve(environ={unknown: "maybe"})
        Runtime.resolve(environ={unknown: "maybe"})
    told = [str(w.message) for w in caught if unknown in str(w.message)]
    assert len(told) == 1 and f"did you mean {meant}?" in told[0]
    assert {w.filename for w in caught} == {__file__}


def test_known_variables_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Runtime.resolve(environ={"LOOM_OTEL_REASONING": "false", "LOOM_OTEL_RETENTION": "30d"})


@pytest.mark.slow
def test_an_unknown_variable_under_zero_code_is_one_line(tmp_path: Path) -> None:
    done = run_app(tmp_path, "nothing", {"LOOM_OTEL_REDACT": "maybe", "LOOM_OTEL_REASONING_STORE": "memory:"})
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "loom-otel:0: LoomOtelWarning: LOOM_OTEL_REDACT is not a loom-otel variable and is ignored; "
        "did you mean LOOM_OTEL_REASONING_TRANSCRIPT?"
    ]


@pytest.mark.slow
def test_a_script_that_uses_no_sdk_hears_about_none(tmp_path: Path) -> None:
    done = run_app(tmp_path, "nothing", {})
    assert done.returncode == 0 and done.stdout.split() == ["started", "done"]
    assert done.stderr == ""


@pytest.mark.slow
def test_the_sdk_in_use_is_told_once_at_the_applications_import(tmp_path: Path) -> None:
    done = run_app(tmp_path, "one-call", {})
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "LoomOtelWarning" in line]
    assert len(lines) == 2, done.stderr  # no store; checkpoints unsigned
    assert next(line for line in lines if "can return model reasoning" in line).startswith(f"{APP}:")
    for line in lines:
        assert "concurrent/futures" not in line and "sitecustomize" not in line and "threading" not in line, line
        assert line.startswith((f"{APP}:", "loom-otel:0: ")), line
