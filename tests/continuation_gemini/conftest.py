from __future__ import annotations

from collections.abc import Iterator

import pytest

from loom_otel.core._bindings import forget_bindings
from tests.continuation.conftest import FlakyStore


@pytest.fixture(autouse=True)
def _fresh_bindings() -> Iterator[None]:
    forget_bindings()
    yield
    forget_bindings()


@pytest.fixture
def flaky_store() -> FlakyStore:
    return FlakyStore()
