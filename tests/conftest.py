from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from loom_otel.core import MemoryReasoningStore, Reasoning, ReasoningConfig
from loom_otel.core._calls._model_call import ModelCall
from loom_otel.core._continuation._bindings import forget_bindings
from loom_otel.core._evidence._journal import _writer as _journal
from loom_otel.core._runtime._config import reset_runtime
from loom_otel.core._scrub import forget_all
from loom_otel.testing import Telemetry
from tests.support.phoenix import phoenix  # noqa: F401 - the session's one Phoenix server
from tests.support.stores import FlakyStore
from tests.support.trust_store import use_the_anchor

use_the_anchor()  # before any SDK client is built (tests/support/trust_store.py)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` keeps the tests that share a costly thing on one worker (tests/support/xdist_groups.py)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.support.xdist_groups import GroupScheduling

    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.support.xdist_groups import misplaced

    if found := misplaced(items):
        raise pytest.UsageError("a test uses a shared server outside its xdist group: " + "; ".join(found))


WIRE = Path(__file__).resolve().parent / "fixtures" / "wire"
"""Recorded wire shapes (public response shapes with invented content), kept in the repository."""


@pytest.fixture(autouse=True)
def _clean_loom_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    for key in list(os.environ):
        if key.startswith("LOOM_OTEL_") or key.startswith("ANTHROPIC_") or key.startswith("OTEL_"):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY", "false")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the default journal's home
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the capture indexes' home
    monkeypatch.chdir(tmp_path)
    # Unsigned checkpoints warn once per process, so which test would see it depends on the order;
    # the test of that warning resets the flag (tests/journal/test_journal.py).
    monkeypatch.setattr(_journal, "_warned_unsigned", True)
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


@pytest.fixture
def flaky_store() -> FlakyStore:
    return FlakyStore()


@pytest.fixture
def completed(monkeypatch: pytest.MonkeyPatch) -> list[list[Reasoning]]:
    """The ``Reasoning`` items each model call completed with (signatures included, for assertions)."""
    seen: list[list[Reasoning]] = []
    original = ModelCall.capture

    def spy(self: ModelCall, reasonings: Any, response: Any) -> Any:
        seen.append(list(reasonings))
        return original(self, reasonings, response)

    monkeypatch.setattr(ModelCall, "capture", spy)
    return seen
