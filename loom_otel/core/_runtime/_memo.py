"""A bounded memo for values computed again and again on the hot path (a loop resends the same
strings every turn): it forgets everything when it grows past its limit, so memory stays bounded."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["BoundedMemo", "DigestMemo"]

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


class DigestMemo:
    """SHA-256 of ``prefix`` followed by a value (a string as UTF-8), memoized by the value alone: no key
    tuple is kept per value, which the garbage collector would count on every call that adds one."""

    __slots__ = ("_memo", "_prefix")

    def __init__(self, prefix: bytes, limit: int) -> None:
        self._prefix = prefix
        self._memo: BoundedMemo[str | bytes, bytes] = BoundedMemo(limit)

    def __call__(self, value: str | bytes) -> bytes:
        return self._memo.get(value, self._compute)

    def _compute(self, value: str | bytes) -> bytes:
        return hashlib.sha256(self._prefix + (value.encode() if isinstance(value, str) else value)).digest()
