from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .receiver import Receiver


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Receiver]:
    r = Receiver(tmp_path / "received.jsonl")
    yield r
    r.stop()
