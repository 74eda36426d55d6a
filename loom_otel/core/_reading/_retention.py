"""Retention settings (``LOOM_OTEL_RETENTION``, ``--retention``, a tenant's ``retention`` in the policy
file): a duration or ``none``. Parsed here once, for ``instrument()`` (which refuses an invalid value),
``loom-otel retain`` and ``loom-otel serve``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from loom_otel.core import environment_variables as env
from loom_otel.core.exceptions import ReasoningConfigError

__all__ = ["ALLOWED", "Retention", "parse_retention"]

_DURATION: Final = re.compile(r"([0-9]+)\s*([smhdw])")
_SECONDS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
ALLOWED: Final = "a duration such as 30d, 12h, 90m, 2w (s, m, h, d, w), or none"


@dataclass(frozen=True, slots=True)
class Retention:
    """How long reasoning is kept, and where that was said (named in every tombstone it causes)."""

    seconds: int
    text: str
    """As written, normalised: ``30d``."""
    named_by: str
    """``LOOM_OTEL_RETENTION``, ``--retention``, ``policy file tenants.acme.retention``."""


def parse_retention(value: str, *, named_by: str = env.LOOM_OTEL_RETENTION) -> Retention | None:
    """``30d``, ``12h``, ... as a ``Retention``; ``none`` (or empty) as ``None`` (kept until erased).
    ``ReasoningConfigError`` naming ``named_by``, the value and what is allowed for anything else."""
    text = value.strip().lower()
    if text in ("", "none"):
        return None
    found = _DURATION.fullmatch(text)
    if found is None or int(found[1]) <= 0:
        raise ReasoningConfigError(f"{named_by}={value!r} is not a retention: use {ALLOWED}")
    return Retention(int(found[1]) * _SECONDS[found[2]], f"{int(found[1])}{found[2]}", named_by)
