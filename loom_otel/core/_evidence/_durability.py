"""Durability shared by the store and the journal: blobs reach the disk no later than the records naming them.

A store that writes blobs to the OS on the calling thread keeps what it has not synced yet and says so
here after each write (``pending``); every journal registers (``register_journal``) and syncs the stores
with writes pending (``sync_dependents``) before it syncs its own records: ``always``, on the calling thread before the
record is written; ``batch``, in the background group commit before the group's records; ``os``, only
at ``force_flush`` or ``close``.
``force_flush`` waits for all of it (OpenTelemetry's convention: ``False`` when it did not finish in
time or failed).

A store syncs with ``syncfs`` (``sync_filesystem``), which writes everything on the file system: a
journal on the same file system whose records were written before that ``syncfs`` started needs no
``fdatasync`` of its own (``syncfs_mark`` / ``synced_since``), one device flush per group, not two.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, Protocol

__all__ = [
    "Dependent",
    "force_flush",
    "pending",
    "register_journal",
    "sync_dependents",
    "sync_filesystem",
    "synced_since",
    "syncfs_mark",
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
    global _dependents_lock, _handles_lock
    _dependents_lock = threading.Lock()  # another thread of the parent may have held it
    _handles_lock = threading.Lock()
    for handle in _handles.values():
        handle.users = 0  # the parent's callers are not the child's (the descriptors are inherited)


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


def _load_syncfs() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int,)
    function.restype = ctypes.c_int
    syncfs: Callable[[int], int] = function
    return syncfs


_syncfs: Final = _load_syncfs()


_started = 0
"""How many ``syncfs`` calls have started (``syncfs_mark``)."""
_done: dict[int, int] = {}
"""Per file system (``st_dev``): the number of the latest ``syncfs`` that started and succeeded."""
_count_lock = threading.Lock()


_HANDLES: Final = 16
"""How many directories ``sync_filesystem`` keeps open (the newest used; one per store root)."""


class _Handle:
    """A directory kept open for ``syncfs``: its descriptor, its file system, how many callers use it now."""

    __slots__ = ("device", "fd", "users")

    def __init__(self, fd: int, device: int) -> None:
        self.fd, self.device, self.users = fd, device, 1


_handles: OrderedDict[str, _Handle] = OrderedDict()
"""directory -> its handle: a group commit's ``syncfs`` makes no ``open``, ``fstat`` and ``close`` of its
own. Each of those gives up the interpreter and must win it back from the calling thread, which wakes
the waiting commit thread on every system call of its own (issue 15)."""
_handles_lock = threading.Lock()


def sync_filesystem(directory: str) -> bool:
    """``syncfs(2)`` the file system holding ``directory``: every file and directory on it reaches the disk
    in one call, however many were written. ``False`` where there is no ``syncfs`` (sync file by file).
    ``FileNotFoundError`` when ``directory`` is missing at its first sync (later ones use the descriptor
    kept open: a directory removed since syncs the file system it was on)."""
    global _started
    if _syncfs is None:
        return False
    handle = _take_handle(directory)
    try:
        with _count_lock:
            _started += 1
            number = _started
        if _syncfs(handle.fd) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, os.strerror(errno))
        with _count_lock:
            _done[handle.device] = max(_done.get(handle.device, 0), number)
    finally:
        _give_back(handle)
    return True


def _take_handle(directory: str) -> _Handle:
    with _handles_lock:
        handle = _handles.get(directory)
        if handle is not None:
            _handles.move_to_end(directory)
            handle.users += 1
            return handle
    fd = os.open(directory, os.O_RDONLY)
    try:
        handle = _Handle(fd, os.fstat(fd).st_dev)
    except BaseException:
        os.close(fd)
        raise
    with _handles_lock:
        kept = _handles.get(directory)
        if kept is not None:  # another caller opened it meanwhile: use that one
            kept.users += 1
            os.close(fd)
            return kept
        _handles[directory] = handle
        idle = [name for name, each in _handles.items() if each.users == 0]
        for name in idle[: max(0, len(_handles) - _HANDLES)]:
            os.close(_handles.pop(name).fd)
    return handle


def _give_back(handle: _Handle) -> None:
    with _handles_lock:
        handle.users -= 1


def syncfs_mark() -> int:
    """A mark to take once some writes are made: ``synced_since(device, mark)`` then tells whether a
    ``syncfs`` of their file system started after it and succeeded (so they are on the disk)."""
    return _started


def synced_since(device: int, mark: int) -> bool:
    return _done.get(device, 0) > mark


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
