"""The reasoning shapes: what a vendor returned, and the recorded form that carries no readable text."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["Reasoning", "ReasoningKind", "ReasoningPart"]


class ReasoningKind(enum.StrEnum):
    """What the vendor returned. A ``summary`` is never upgraded to ``text``."""

    TEXT = "text"
    SUMMARY = "summary"
    REDACTED = "redacted"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Reasoning:
    """One reasoning block as the vendor returned it, in vendor order.

    ``text`` is ``""`` for a block whose display was omitted and ``None`` for a redacted block.
    ``signature`` holds the vendor's opaque continuation bytes (signature, redacted data, encrypted
    content); loom-otel never reads it and never exports it. Neither appears in ``repr``.
    """

    kind: ReasoningKind
    provider: str
    text: str | None = field(default=None, repr=False)
    signature: str | bytes | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class ReasoningPart:
    """The recorded form of one reasoning block: references and digests, never readable text.

    ``omitted`` is true when readable text existed and was not kept (no store, or capture off).
    ``signature`` rides along for continuation and is excluded from ``repr``.
    """

    kind: ReasoningKind
    provider: str
    signature: str | bytes | None = field(default=None, repr=False)
    text_ref: str | None = None
    digest: str | None = None
    size: int = 0
    omitted: bool = False
