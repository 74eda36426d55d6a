from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from loom_otel.core import MemoryReasoningStore, Reasoning, ReasoningConfig
from loom_otel.core._bindings import forget_bindings
from loom_otel.core._call import ModelCall
from loom_otel.core._config import reset_runtime
from loom_otel.core._scrub import forget_all
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
    forget_bindings()
    forget_all()
    yield
    reset_runtime()
    forget_bindings()
    forget_all()


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


class FlakyStore(MemoryReasoningStore):
    """A memory store whose reads can be made to fail (an outage)."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = False

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        if self.broken:
            raise TimeoutError("store outage")
        return super().get(ref, tenant=tenant, execution_id=execution_id)


@pytest.fixture
def flaky_store() -> FlakyStore:
    return FlakyStore()


@pytest.fixture
def completed(monkeypatch: pytest.MonkeyPatch) -> list[list[Reasoning]]:
    """The ``Reasoning`` items each model call completed with (signatures included, for assertions)."""
    seen: list[list[Reasoning]] = []
    original = ModelCall.complete

    def spy(self: ModelCall, reasonings: Any, response: Any) -> Any:
        seen.append(list(reasonings))
        return original(self, reasonings, response)

    monkeypatch.setattr(ModelCall, "complete", spy)
    return seen
