from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from loom_otel.core import _journal

from .receiver import Receiver


@pytest.fixture(autouse=True)
def _quiet_unsigned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_journal, "_warned_unsigned", True)


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Receiver]:
    r = Receiver(tmp_path / "received.jsonl")
    yield r
    r.stop()
