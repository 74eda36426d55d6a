"""The one log-and-continue helper for user callbacks and telemetry plumbing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["logger", "shielded"]

logger = logging.getLogger("loom_otel")

P = ParamSpec("P")
R = TypeVar("R")

_reported: set[str] = set()


def shielded(what: str, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R | None:
    """Run ``fn``; on an exception log it once per ``what`` (type only, never its message, which may
    quote model output) and return ``None``."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        if what not in _reported:
            _reported.add(what)
            logger.warning("loom-otel: %s failed (%s); continuing", what, type(exc).__name__)
        return None
