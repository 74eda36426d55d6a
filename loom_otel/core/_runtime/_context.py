"""Execution and step scopes (contextvars, so threads and asyncio tasks each see their own)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from loom_otel.core._runtime._fork import renew_module_after_fork

if TYPE_CHECKING:
    from loom_otel.core._evidence._store._protocol import ReasoningStore

__all__ = ["ExecutionScope", "current_execution", "current_step", "execution", "next_attempt", "step"]


@dataclass(frozen=True, slots=True)
class ExecutionScope:
    """Who a capture belongs to. ``principal`` asked; ``owner`` administers (both may read it back)."""

    execution_id: str
    tenant: str | None = None
    principal: str | None = None
    owner: str | None = None
    capture: bool | None = None
    """``execution(capture=...)``: this execution's own capture setting (``None``: the configuration's)."""
    store: ReasoningStore | str | None = None
    """``execution(store=...)``: this execution's own store (an instance or a URL; ``None``: its tenant's,
    else the configuration's)."""


_EXECUTION: ContextVar[ExecutionScope | None] = ContextVar("loom_otel_execution", default=None)
_STEP: ContextVar[str | None] = ContextVar("loom_otel_step", default=None)


@contextlib.contextmanager
def execution(
    execution_id: str,
    *,
    tenant: str | None = None,
    principal: str | None = None,
    owner: str | None = None,
    capture: bool | None = None,
    store: ReasoningStore | str | None = None,
) -> Iterator[ExecutionScope]:
    """Model calls inside this block are captured for ``execution_id`` (sealed to it and ``tenant``).

    Without one, the execution id is the current trace id (32 hex characters). ``capture=False`` keeps no
    text of this execution's calls; ``store`` (a ``ReasoningStore`` or a URL) keeps it there and reads it
    back from there: both override the configuration for this execution only (ADR D7).
    """
    if not execution_id:
        raise ValueError("execution_id must be a non-empty string")
    scope = ExecutionScope(execution_id, tenant, principal, owner, capture, store)
    token = _EXECUTION.set(scope)
    try:
        yield scope
    finally:
        _EXECUTION.reset(token)


@contextlib.contextmanager
def step(step_id: str) -> Iterator[str]:
    """Names the step of the model calls inside this block; without one, the model-call span id."""
    if not step_id:
        raise ValueError("step_id must be a non-empty string")
    token = _STEP.set(step_id)
    try:
        yield step_id
    finally:
        _STEP.reset(token)


def current_execution() -> ExecutionScope | None:
    return _EXECUTION.get()


def current_step() -> str | None:
    return _STEP.get()


_attempts: dict[tuple[str | None, str, str], int] = {}
_attempts_lock = threading.Lock()
renew_module_after_fork(__name__)
_ATTEMPTS_KEPT: Final = 65536
"""Named steps whose counts are remembered; the oldest is forgotten first (it would count from 1 again)."""


def next_attempt(
    tenant: str | None,
    execution_id: str,
    step_id: str,
    *,
    named: bool,
    recorded: Callable[[str | None, str, str], int] | None = None,
) -> int:
    """1 for the first capture of (tenant, execution, step), then 2, 3, ...

    Only named steps (``step()``, ``named=True``) are counted: a step that defaults to the model-call
    span id is one call, always attempt 1, and is not remembered. ``recorded`` gives the highest attempt
    earlier processes recorded (the journal); it is asked once per step and process, at its first
    capture, outside the lock, so a rerun in a new process is the next attempt."""
    if not named:
        return 1
    key = (tenant, execution_id, step_id)
    base = 0
    if recorded is not None:
        with _attempts_lock:
            known = key in _attempts
        if not known:
            base = recorded(tenant, execution_id, step_id)
    with _attempts_lock:
        attempt = max(_attempts.pop(key, 0), base) + 1
        _attempts[key] = attempt  # re-inserted: the dict's order is the order of last use
        if len(_attempts) > _ATTEMPTS_KEPT:
            del _attempts[next(iter(_attempts))]
    return attempt
