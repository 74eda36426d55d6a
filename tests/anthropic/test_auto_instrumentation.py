"""``opentelemetry-instrument python app.py`` instruments an unmodified application."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.testing.simulator import Simulator, serve
from tests.support.instrumentors import only_loom_instrumentations

APP = textwrap.dedent(
    """
    import anthropic
    client = anthropic.Anthropic(max_retries=0)
    message = client.messages.create(
        model="claude-sonnet-4-6", max_tokens=4096, thinking={"type": "enabled", "budget_tokens": 2048},
        messages=[{"role": "user", "content": "hello"}])
    print("blocks:", [b.type for b in message.content])
    """
)


def _run(tmp_path: Path, url: str, *disabled: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "app.py").write_text(APP)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOM_OTEL_", "OTEL_"))}
    env.update(
        only_loom_instrumentations(*disabled),
        ANTHROPIC_API_KEY="sim",
        ANTHROPIC_BASE_URL=url,
        OTEL_TRACES_EXPORTER="console",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        LOOM_OTEL_REASONING_STORE=f"file://{tmp_path}/store",
    )
    instrument = Path(sys.executable).with_name("opentelemetry-instrument")
    return subprocess.run(
        [str(instrument), sys.executable, "app.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_opentelemetry_instrument_captures_without_code_change(tmp_path):
    with serve(Simulator(reasoning_text="CANARY-auto-9d1")) as server:
        done = _run(tmp_path, server.url)
    assert done.returncode == 0, done.stderr
    assert "blocks: ['thinking', 'text']" in done.stdout
    assert "loom.reasoning.captured" in done.stdout  # the console exporter printed our span event
    assert "CANARY-auto-9d1" not in done.stdout + done.stderr
    records = list(iter_records(tmp_path / "store" / "journal"))
    assert [r["type"] for r in records if r["type"] != "checkpoint"] == ["capture"]


@pytest.mark.slow
def test_disabled_instrumentations_turns_it_off(tmp_path):
    with serve(Simulator()) as server:
        done = _run(tmp_path, server.url, "loom_anthropic")
    assert done.returncode == 0, done.stderr
    assert "loom.reasoning.captured" not in done.stdout
    assert [r for r in iter_records(tmp_path / "store" / "journal") if r["type"] == "capture"] == []
