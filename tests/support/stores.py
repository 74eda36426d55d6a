"""Stores for tests: a memory store whose reads can be made to fail."""

from __future__ import annotations

from loom_otel.core import MemoryReasoningStore

__all__ = ["FlakyStore"]


class FlakyStore(MemoryReasoningStore):
    """A memory store whose reads can be made to fail (an outage)."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = False

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        if self.broken:
            raise TimeoutError("store outage")
        return super().get(ref, tenant=tenant, execution_id=execution_id)
