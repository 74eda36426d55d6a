"""Durability shared by the store and the journal: blobs reach the disk no later than the records naming them.

A store that writes blobs to the OS on the calling thread keeps what it has not synced yet and says so
here after each write (``pending``); every journal registers (``register_journal``) and syncs the stores
with writes pending (``sync_dependents``) before it syncs its own records: ``always``, on the calling thread before the
record is written; ``batch``, in the background group commit before the group's records; ``os``, only
at ``force_flush`` or ``close``.
``force_flush`` waits for all of it (OpenTelemetry's convention: ``False`` when it did not finish in
time or failed).

Each file and directory is synced by itself (``fdatasync``, ``fsync``): loom-otel flushes only its own
writes, never another program's (a ``syncfs`` of the file system would write back a neighbour's dirty
pages too, and the neighbour would set how long each group commit takes; issue 49).
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from typing import Protocol

__all__ = [
    "Dependent",
    "force_flush",
    "pending",
    "register_journal",
    "sync_dependents",
]

_logger = logging.getLogger(__name__)


class Dependent(Protocol):
    """Something whose writes a journal record may name: it syncs them when asked."""

    def sync_pending(self) -> None:
        """Make every write made so far durable; ``OSError`` when it cannot (kept pending, retried)."""
        ...


class Flushable(Protocol):
    """A journal: ``flush`` syncs the registered stores' pending blobs, then its own records."""

    def flush(self) -> None: ...


_pending: dict[int, tuple[weakref.ref[Dependent], int]] = {}
"""The dependents with writes not synced yet, by ``id``, each with the number of its latest ``pending``: a
sync forgets a dependent only when no write came after the sync began. Only these are visited: a
process's idle or discarded stores cost nothing (a store dropped by its owner closes as it goes)."""
_marks = 0
_journals: weakref.WeakSet[Flushable] = weakref.WeakSet()
_dependents_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _dependents_lock
    _dependents_lock = threading.Lock()  # another thread of the parent may have held it


os.register_at_fork(after_in_child=_after_fork_in_child)


def pending(dependent: Dependent) -> None:
    """``dependent`` made a write that a journal record may name (before the record is written)."""
    global _marks
    with _dependents_lock:
        _marks += 1
        _pending[id(dependent)] = (weakref.ref(dependent), _marks)


def register_journal(journal: Flushable) -> None:
    with _dependents_lock:
        _journals.add(journal)


def sync_dependents() -> None:
    """Sync the writes pending in every store. A store being synced by another caller stays listed until
    that sync ends, so this waits for it too (``sync_pending`` syncs one caller at a time); one that fails
    (``OSError``, raised here) stays listed for the next call."""
    with _dependents_lock:
        taken = list(_pending.items())
    for key, (ref, mark) in taken:
        dependent = ref()
        if dependent is not None:
            dependent.sync_pending()
        with _dependents_lock:
            if _pending.get(key, (ref, 0))[1] == mark:
                del _pending[key]


def _flush_all() -> None:
    with _dependents_lock:
        journals = list(_journals)
    for journal in journals:  # each syncs the stores' pending blobs, then its records
        journal.flush()
    sync_dependents()  # a store no journal names


def force_flush(timeout_millis: int = 30000) -> bool:
    """Wait until every blob and journal record written so far is on the disk (whatever the durability).

    ``True`` when done; ``False`` when it failed (logged) or did not finish within ``timeout_millis``
    (the work goes on in the background). Never raises.
    """
    done = threading.Event()
    ok: list[bool] = []

    def work() -> None:
        try:
            _flush_all()
            ok.append(True)
        except OSError as exc:
            _logger.warning("loom-otel: force_flush could not sync (%s)", type(exc).__name__)
        finally:
            done.set()

    threading.Thread(target=work, name="loom-otel-force-flush", daemon=True).start()
    return done.wait(max(0, timeout_millis) / 1000) and bool(ok)
