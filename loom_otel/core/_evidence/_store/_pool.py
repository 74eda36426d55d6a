"""Ready scope directories and packs for ``FileReasoningStore``: made in the background, renamed into place
on first use.

A new execution's first blob needs its scope directory and a pack in it: a ``mkdir`` and an
``open(O_CREAT)``, 40 to 800 us of file-system metadata work each (a ``rename`` is ~10 us) that a new
conversation per call would pay on the calling thread every time. A writer instead keeps a pool of them
in a private directory of ``blobs/.pools/`` (``blobs/.pools/.ready-<pid>-<random>/``; everything that
lists ``blobs/`` skips dot-entries, and finding dead writers' pools lists ``.pools`` alone, never the
scopes). A background thread keeps the pool filled with two kinds of entries:

- a directory holding one empty pack already open for appending: the store takes it by renaming it to
  ``blobs/<scope>`` (one ``rename``, and the rename tells a new execution from an existing one);
- once asked (``want_packs``), a given number of empty packs already open for appending: the store takes
  one by renaming it into a shard of the shared packs where it has none yet. A fresh writer of many new
  conversations needs one in nearly every one of the 64 shards over its first few hundred captures.

While it is alive the writer holds an exclusive ``flock`` on its pool directory (as the journal does on
its origin directory), so a pool whose lock can be taken belongs to a dead writer: ``sweep`` removes it.
An entry holds no data, so removing one never loses anything. Nothing here raises into the app: a pool
that cannot be made or filled logs once and leaves new executions to the calling thread's ``mkdir``.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["PACK_FLAGS", "POOLS", "POOL_PREFIX", "Ready", "ReadyPack", "ScopePool", "discard", "pack_name", "sweep"]

_logger = logging.getLogger(__name__)

POOLS: Final = ".pools"
"""The directory of ``blobs/`` that holds every writer's pool (a dot-entry: no scope's name starts with a dot)."""
POOL_PREFIX: Final = ".ready-"
"""How a pool directory's name starts."""
_SIZE: Final = 8
"""Ready directories a pool aims to hold at first (each holds one open descriptor). Few: making them
slows the calling thread's own writes while it runs (file creation is file-system metadata work), and a
writer of one named execution now and then needs one; a writer of many grows it (``_MAX_SIZE``)."""
_MAX_SIZE: Final = 128
"""The most a pool grows to: each time a burst empties it, it aims for twice as many."""
PACK_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL
"""How a new pack is opened: made here (never another's). Not ``O_APPEND``: each record is written with
``pwritev`` at the offset reserved for it (on Linux ``O_APPEND`` would make ``pwritev`` ignore it)."""
_JOIN_SECONDS: Final = 10.0
"""How long ``close`` waits for the filling thread (it is at most one ``mkdir`` away from stopping)."""


@dataclass(frozen=True, slots=True)
class Ready:
    """One ready entry: its directory in the pool, its pack's file name, and the pack's open descriptor."""

    directory: str
    pack: str
    fd: int


@dataclass(frozen=True, slots=True)
class ReadyPack:
    """One ready empty pack: its path in the pool and its open descriptor."""

    path: str
    fd: int


def pack_name(pid: int) -> str:
    """A new pack's file name: its writer's pid (a forked child tells its own packs by it) and a random part."""
    return f"{pid}-{os.urandom(6).hex()}.pack"


class ScopePool:
    """One writer's ready scope directories (and packs) under ``blobs_dir``, filled by a daemon thread.

    ``take`` and ``take_pack`` never wait: they answer ``None`` when none is ready (a burst emptied the
    pool, or it is not filled yet, or it failed), and the caller makes its own. Per process: a forked
    child ``forget``s its parent's pool (without touching it) and starts its own."""

    def __init__(self, blobs_dir: str) -> None:
        self.blobs_dir = blobs_dir
        self.directory = ""
        """The pool directory (set by the filling thread once it is made and locked)."""
        self.failed_at: float | None = None
        """``time.monotonic()`` when the pool failed and was closed (``None``: it works)."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._ready: list[Ready] = []
        self._packs: list[ReadyPack] = []
        self._packs_to_make = 0
        """Packs still to make (``want_packs``); a taken pack is not replaced."""
        self._homes: list[str] = []
        """Directories the packs will be renamed into, made here if they are missing (``want_packs``)."""
        self._directories = False
        """Whether directories are wanted (from the first ``take`` on: a writer of named executions)."""
        self._size = _SIZE
        self._full = False
        """Whether the pool was full since it last ran dry (a burst that empties it then grows it once)."""
        self._closed = False
        self._dir_fd = -1
        self._wake.set()  # fill it straight away
        self._thread = threading.Thread(target=self._run, name="loom-otel-scope-pool", daemon=True)
        try:
            self._thread.start()
        except RuntimeError as exc:  # no thread to spare: new executions make their directories themselves
            _logger.warning("loom-otel: no thread for ready reasoning scope directories (%s)", exc)
            self._closed, self.failed_at = True, time.monotonic()

    def take(self) -> Ready | None:
        """A ready entry, or ``None`` when there is none (the filling thread is woken when the pool runs low)."""
        with self._lock:
            if self._closed:
                return None
            self._directories = True
            if not self._ready:
                if self._full:  # a burst outran it: keep more from now on
                    self._size, self._full = min(2 * self._size, _MAX_SIZE), False
                self._wake.set()
                return None
            ready = self._ready.pop()
            if len(self._ready) < self._size // 2:
                self._wake.set()
            return ready

    def want_packs(self, count: int, homes: Sequence[str] = ()) -> None:
        """Make ``count`` more ready packs, and each of ``homes`` (where they will be renamed) that is
        missing; the filling thread makes them after the directories."""
        with self._lock:
            self._packs_to_make += count
            self._homes += homes
        self._wake.set()

    def take_pack(self) -> ReadyPack | None:
        """A ready empty pack, or ``None`` when there is none."""
        with self._lock:
            return None if self._closed or not self._packs else self._packs.pop()

    def give_back(self, ready: Ready) -> None:
        """Return an entry ``take`` gave that was not used (its scope existed already)."""
        with self._lock:
            if not self._closed:
                self._ready.append(ready)
                return
        discard(ready)

    def wait_filled(self, timeout: float) -> bool:
        """Top the pool up and wait until it holds as many directories as it aims for (if it keeps any)
        and every pack asked for is made (tests and benchmarks)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if (not self._directories or len(self._ready) >= self._size) and self._packs_to_make <= 0:
                    return True
                if self._closed:
                    return False
            self._wake.set()
            time.sleep(0.001)
        return False

    def close(self) -> None:
        """Stop filling, close the entries' descriptors and remove the pool directory (its own process only)."""
        if os.getpid() != self._pid:
            return  # a forked child's copy: the pool is the parent's
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._wake.set()
        if self._thread is not threading.current_thread():
            self._thread.join(_JOIN_SECONDS)
        self._remove()

    def forget(self) -> None:
        """In a forked child: close the inherited descriptors (the lock stays the parent's) and touch
        nothing on disk. No lock is taken: another thread of the parent may have held it at the fork."""
        self._closed = True
        for ready in self._ready:
            _close(ready.fd)
        for pack in self._packs:
            _close(pack.fd)
        self._ready, self._packs = [], []
        if self._dir_fd >= 0:
            _close(self._dir_fd)
            self._dir_fd = -1

    # -- the filling thread --------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._open()
            while True:
                self._wake.wait()
                self._wake.clear()
                if not self._fill():
                    return
        except Exception as exc:  # never into the app: new executions make their directories themselves
            _logger.warning(
                "loom-otel: no ready reasoning scope directories under %s (%s); new executions make "
                "theirs on the calling thread",
                self.blobs_dir,
                exc,
            )
            with self._lock:
                self._closed = True
            self.failed_at = time.monotonic()
            self._remove()

    def _open(self) -> None:
        """Make the pool directory and take its lock (a sweeper that locked it first removes it: again)."""
        pools = f"{self.blobs_dir}/{POOLS}"
        for _ in range(3):
            directory = f"{pools}/{POOL_PREFIX}{self._pid}-{os.urandom(6).hex()}"
            try:
                os.mkdir(directory, 0o700)
            except FileNotFoundError:  # the first pool of this store (or ``.pools`` was removed)
                os.makedirs(pools, 0o700, exist_ok=True)
                os.mkdir(directory, 0o700)
            try:
                fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            except FileNotFoundError:
                continue  # swept between the mkdir and the open
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if os.fstat(fd).st_nlink > 0:  # not swept before the lock was ours
                    with self._lock:
                        self.directory, self._dir_fd = directory, fd
                    return
            except BlockingIOError:
                pass  # a sweeper holds it and is removing it
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
        raise OSError("a pool directory was removed each time it was made")

    def _fill(self) -> bool:
        """Make entries until the pool holds as many directories as it aims for and every pack asked for;
        ``False`` once it is closed."""
        while True:
            with self._lock:
                if self._closed:
                    return False
                directories = self._directories and len(self._ready) < self._size
                if not directories:
                    self._full = self._full or self._directories
                    if self._packs_to_make <= 0:
                        return True
            if directories:
                ready = self._make()
                with self._lock:
                    if not self._closed:
                        self._ready.append(ready)
                        continue
                discard(ready)
                return False
            with self._lock:
                home = self._homes.pop() if self._homes else None
            if home is not None:
                os.makedirs(home, 0o700, exist_ok=True)
            pack = self._make_pack()
            with self._lock:
                if not self._closed:
                    self._packs.append(pack)
                    self._packs_to_make -= 1
                    continue
            _close(pack.fd)  # in the pool directory, which ``close`` removes
            return False

    def _make(self) -> Ready:
        directory = f"{self.directory}/{os.urandom(8).hex()}"
        os.mkdir(directory, 0o700)
        pack = pack_name(self._pid)
        try:
            fd = os.open(f"{directory}/{pack}", PACK_FLAGS, 0o600)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return Ready(directory, pack, fd)

    def _make_pack(self) -> ReadyPack:
        path = f"{self.directory}/{pack_name(self._pid)}"
        return ReadyPack(path, os.open(path, PACK_FLAGS, 0o600))

    def _remove(self) -> None:
        with self._lock:
            ready, self._ready = self._ready, []
            packs, self._packs = self._packs, []
            directory, dir_fd, self._dir_fd = self.directory, self._dir_fd, -1
        for entry in ready:
            _close(entry.fd)
        for pack in packs:
            _close(pack.fd)
        if directory:
            shutil.rmtree(directory, ignore_errors=True)
        if dir_fd >= 0:
            _close(dir_fd)  # the lock goes last: nobody sweeps a pool that is still being removed


def sweep(blobs_dir: str) -> None:
    """Remove the pools of dead writers under ``blobs_dir``: those whose ``flock`` can be taken (one
    listdir of ``.pools``, however many executions ``blobs_dir`` holds)."""
    pools = f"{blobs_dir}/{POOLS}"
    try:
        names = os.listdir(pools)
    except OSError:
        return
    for name in names:
        if not name.startswith(POOL_PREFIX):
            continue
        path = f"{pools}/{name}"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            _close(fd)  # its writer is alive
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            _close(fd)


def discard(ready: Ready) -> None:
    _close(ready.fd)
    shutil.rmtree(ready.directory, ignore_errors=True)


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
