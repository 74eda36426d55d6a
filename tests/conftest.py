from __future__ import annotations

import os
from pathlib import Path

import pytest

from loom_otel.core import MemoryReasoningStore, ReasoningConfig
from loom_otel.core._config import reset_runtime
from loom_otel.testing import Telemetry

WIRE = Path(os.environ.get("LOOM_OTEL_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "vendor" / "wire"


@pytest.fixture(autouse=True)
def _clean_loom_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    for key in list(os.environ):
        if key.startswith("LOOM_OTEL_") or key.startswith("ANTHROPIC_") or key.startswith("OTEL_"):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY", "false")
    monkeypatch.chdir(tmp_path)
    reset_runtime()
    yield
    reset_runtime()


@pytest.fixture
def telemetry() -> Telemetry:
    return Telemetry.in_memory()


@pytest.fixture
def store() -> MemoryReasoningStore:
    return MemoryReasoningStore()


@pytest.fixture
def journal_dir(tmp_path: Path) -> Path:
    return tmp_path / "journal"


@pytest.fixture
def config(store: MemoryReasoningStore, journal_dir: Path) -> ReasoningConfig:
    return ReasoningConfig(store=store, journal=journal_dir)


@pytest.fixture
def wire() -> Path:
    return WIRE
