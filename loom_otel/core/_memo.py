"""A bounded memo for values computed again and again on the hot path (a loop resends the same
strings every turn): it forgets everything when it grows past its limit, so memory stays bounded."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["BoundedMemo"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedMemo(Generic[K, V]):
    """``get(key, compute)``: the memoized ``compute(key)``; cleared when it holds more than ``limit``."""

    __slots__ = ("_found", "_limit")

    def __init__(self, limit: int) -> None:
        self._found: dict[K, V] = {}
        self._limit = limit

    def get(self, key: K, compute: Callable[[K], V]) -> V:
        found = self._found.get(key)
        if found is None:
            if len(self._found) > self._limit:
                self._found.clear()
            found = self._found[key] = compute(key)
        return found
