"""What loom-otel runs in the background for a configuration, and how it ends.

A runtime in use (``instrument()``) may have started background work that outlives the model calls:
the file store's pool thread making ready scope directories and packs (``_store._pool``), the audit
journal's group-commit and checkpoint threads, and the journal's lock on its origin directory.
``hold`` notes that an instrumentor uses a runtime; ``release`` (``uninstrument()``) flushes what the
runtime owes and stops that work, for the store and the journal no other instrumentor still holds:
the store syncs and closes (its ready directories removed), the journal checkpoints, syncs and lets
its origin go. Both reopen on their next write, so a later ``instrument()`` works as the first did.
``close_everything`` (``loom_otel.testing.reset_runtime``) does the same for everything loom-otel
opened in the process. Nothing here raises into the application: a failure to close is logged.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from loom_otel.core._evidence._journal._writer import Journal, live_journals, local_journals
from loom_otel.core._runtime._config import Runtime, open_stores

__all__ = ["close_everything", "hold", "release"]

_logger = logging.getLogger(__name__)
_lock = threading.Lock()
_held: dict[object, Runtime] = {}


def hold(owner: object, runtime: Runtime) -> None:
    """``owner`` (an instrumentor) uses ``runtime`` until ``release(owner)``."""
    with _lock:
        _held[owner] = runtime


def release(owner: object) -> None:
    """``owner`` no longer uses its runtime: close its store and journal unless another holder uses them."""
    with _lock:
        runtime = _held.pop(owner, None)
        if runtime is None:
            return
        others = list(_held.values())
    stores = [] if runtime.store is None or any(r.store is runtime.store for r in others) else [runtime.store]
    in_use = {r.journal_dir for r in others}
    journals = [] if runtime.journal_dir in in_use else local_journals(runtime.journal_dir)
    _close(stores, journals)


def close_everything() -> None:
    """Close every store and journal loom-otel opened in this process, held or not (an instrumentor
    still instrumented keeps its hold: its next write reopens them, its ``uninstrument()`` closes them)."""
    with _lock:
        held = list(_held.values())
    stores: list[Any] = []
    for store in [*(r.store for r in held), *open_stores()]:
        if store is not None and all(store is not s for s in stores):
            stores.append(store)
    _close(stores, live_journals())


def _close(stores: Iterable[object], journals: Iterable[Journal]) -> None:
    """Stores first (their pending blobs synced), then journals (whose records name those blobs)."""
    for store in stores:
        close = getattr(store, "close", None)
        if callable(close):
            _quietly(close, f"closing {type(store).__name__}")
    for journal in journals:
        _quietly(journal.close, f"closing the audit journal {journal.origin}")


def _quietly(action: Any, what: str) -> None:
    try:
        action()
    except Exception as exc:
        _logger.warning("loom-otel: %s failed (%s: %s)", what, type(exc).__name__, exc)
