"""Fork safety in one place: a forked child gets every loom-otel lock back unlocked.

``fork()`` copies each lock in the state it is in. When another thread of the parent held one (a
store ``put``, a journal ``append``, a live ``offer`` in flight), the child's copy stays locked for
good, since that thread does not exist in the child, and the child's next call hangs. So each
object that owns locks registers once (``renew_after_fork(self)`` in its ``__init__``; a module with
module-level locks calls ``renew_module_after_fork(__name__)``). In the child, before its code runs
again, every ``threading`` lock, condition and event held as an attribute (a module's globals) is
re-initialised, unlocked and with no waiters, and then the object's ``after`` function runs. That
function restarts what does not survive a fork, such as worker threads. Registration holds a weak
reference, so it does not keep an object alive.

The state a lock guarded stays as the parent left it. loom-otel's locks guard caches, indexes and
counters that a half-done update leaves usable: an entry may be missing, or recorded twice. Owners
that keep per-process state (open files, chains, threads) start it afresh in ``after``.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any, Final, TypeVar

__all__ = ["renew_after_fork", "renew_module_after_fork"]

_T = TypeVar("_T")
_logger = logging.getLogger(__name__)

_RENEWED: Final = (type(threading.Lock()), type(threading.RLock()), threading.Condition, threading.Event)
"""What is re-initialised in the child (each has ``_at_fork_reinit``, as CPython's own at-fork uses)."""

_objects: dict[int, tuple[weakref.ref[Any], Callable[[Any], object] | None]] = {}
_modules: list[str] = []


def renew_after_fork(owner: _T, after: Callable[[_T], object] | None = None) -> None:
    """In a forked child, re-initialise ``owner``'s lock attributes, then call ``after(owner)``.

    ``after`` should be a plain function or an unbound method (``Class._after_fork``): a bound
    method would keep ``owner`` alive."""
    key = id(owner)
    _objects[key] = (weakref.ref(owner, lambda _: _objects.pop(key, None)), after)


def renew_module_after_fork(name: str) -> None:
    """In a forked child, re-initialise the module-level locks of module ``name``."""
    if name not in _modules:
        _modules.append(name)


def _renew(namespace: dict[str, Any]) -> None:
    for value in list(namespace.values()):
        reinit = getattr(value, "_at_fork_reinit", None) if isinstance(value, _RENEWED) else None
        if reinit is not None:
            reinit()


def _in_child() -> None:
    for name in _modules:
        module = sys.modules.get(name)
        if module is not None:
            _renew(vars(module))
    for ref, after in list(_objects.values()):
        owner = ref()
        if owner is None:
            continue
        try:
            namespace = getattr(owner, "__dict__", None)
            if isinstance(namespace, dict):
                _renew(namespace)
            if after is not None:
                after(owner)
        except Exception as exc:  # never fail the child's fork over bookkeeping
            _logger.warning("loom-otel: resetting %s after fork failed (%s)", type(owner).__name__, type(exc).__name__)
        del owner


os.register_at_fork(after_in_child=_in_child)
