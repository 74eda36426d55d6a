"""Issue 48: the OpenAI Agents SDK exports its own traces to OpenAI, outside OpenTelemetry. loom-otel
cannot reach them, so ``instrument()`` says so once, naming the SDK and its switch, wherever the SDK is
installed and its export is on (an installed distribution is its metadata on ``sys.path``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from loom_otel.core import LoomOtelWarning, MemoryReasoningStore, ReasoningConfig
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import instrumented

VERSION = "0.24.0"


@pytest.fixture
def agents_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = tmp_path / f"openai_agents-{VERSION}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: openai-agents\nVersion: {VERSION}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def _warnings(environ: dict[str, str | None], tmp_path: Path) -> list[str]:
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "journal")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with instrumented(OpenAiInstrumentor(), config=config, environ=environ):
            pass
    return [str(w.message) for w in caught if issubclass(w.category, LoomOtelWarning)]


@pytest.mark.usefixtures("agents_installed")
def test_the_agents_sdk_trace_export_is_named_once(tmp_path: Path) -> None:
    found = [m for m in _warnings({"OPENAI_AGENTS_DISABLE_TRACING": None}, tmp_path) if "Agents SDK" in m]
    assert found == [
        f"the OpenAI Agents SDK (openai-agents {VERSION}) exports its own traces to OpenAI, outside "
        "OpenTelemetry: loom-otel cannot reach or scrub them (tool arguments and results, and a Chat "
        "Completions model's messages); set OPENAI_AGENTS_DISABLE_TRACING=true (or call "
        "agents.set_tracing_disabled(True)) where they must not leave"
    ]


@pytest.mark.usefixtures("agents_installed")
@pytest.mark.parametrize("switch", ["true", "1", "TRUE"])
def test_no_warning_where_the_export_is_off(switch: str, tmp_path: Path) -> None:
    assert [m for m in _warnings({"OPENAI_AGENTS_DISABLE_TRACING": switch}, tmp_path) if "Agents SDK" in m] == []


def test_no_warning_without_the_agents_sdk(tmp_path: Path) -> None:
    assert [m for m in _warnings({"OPENAI_AGENTS_DISABLE_TRACING": None}, tmp_path) if "Agents SDK" in m] == []
