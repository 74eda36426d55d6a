"""``Untrusted``: model reasoning handed back to code, marked so it cannot become an instruction."""

from __future__ import annotations

from typing import Final

__all__ = ["FENCE_CLOSE", "FENCE_OPEN", "Untrusted"]

FENCE_OPEN: Final = "<untrusted-model-output origin={origin}>"
FENCE_CLOSE: Final = "</untrusted-model-output>"


class Untrusted:
    """Text derived from untrusted input (model reasoning), with where it came from.

    Not a ``str``: ``str()``, ``repr()`` and f-strings show the origin and size, never the text. Read
    ``.text`` deliberately; ``fenced()`` gives a delimited form that the request guard accepts only
    inside a user message.
    """

    __slots__ = ("_text", "origin")

    def __init__(self, text: str, *, origin: str) -> None:
        self._text = text
        self.origin = origin

    @property
    def text(self) -> str:
        return self._text

    def fenced(self) -> str:
        body = self._text.replace(FENCE_CLOSE, "</untrusted-model-output\u200b>")
        return f"{FENCE_OPEN.format(origin=self.origin)}\n{body}\n{FENCE_CLOSE}"

    def __len__(self) -> int:
        return len(self._text)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Untrusted):
            return NotImplemented
        return self._text == other._text and self.origin == other.origin

    def __hash__(self) -> int:
        return hash((self._text, self.origin))

    def __repr__(self) -> str:
        return f"Untrusted(origin={self.origin!r}, chars={len(self._text)})"

    __str__ = __repr__
