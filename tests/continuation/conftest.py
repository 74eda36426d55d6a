from __future__ import annotations

from collections.abc import Iterator

import pytest

from loom_otel.core import MemoryReasoningStore
from loom_otel.core._bindings import forget_bindings


class FlakyStore(MemoryReasoningStore):
    """A memory store whose reads can be made to fail (an outage)."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = False

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        if self.broken:
            raise TimeoutError("store outage")
        return super().get(ref, tenant=tenant, execution_id=execution_id)


@pytest.fixture(autouse=True)
def _fresh_bindings() -> Iterator[None]:
    forget_bindings()
    yield
    forget_bindings()


@pytest.fixture
def flaky_store() -> FlakyStore:
    return FlakyStore()
