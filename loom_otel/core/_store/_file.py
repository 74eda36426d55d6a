"""``FileReasoningStore``: sealed blobs in append-only pack files, one directory per (tenant, execution).

Layout: ``root/blobs/<scope>/<writer>.pack`` plus ``root/blobs/<scope>/.digest-key`` (keyed digests).
Each process appends to its own pack in a scope, so a capture costs one ``writev`` on an open file
instead of creating a file (the file system's metadata work is done once per execution and writer).
Erasure removes the scope directory, which is exactly one execution's blobs and key.

A new execution's directory and pack come ready-made: a writer keeps a pool of them in a private
dot-directory (``blobs/.pools/.ready-<pid>-<random>``, filled by a background thread; ``_pool``) and
renames one to ``blobs/<scope>`` at the execution's first blob, so a new conversation per call costs
one ``rename`` on the calling thread instead of a ``mkdir`` and an ``open(O_CREAT)``. The rename fails
when the execution already has a directory (another writer's, an earlier run's): that one is indexed
and used. Everything that lists ``blobs/`` skips dot-entries; ``close`` removes the writer's pool, and
a writer that died leaves one that the next store on the root removes (its ``flock`` is free).

A pack record is ``FRAME(magic, ref length, blob length) | ref | blob``; the blob is the sealed form
(``LOOMR1\\n`` + header + UTF-8 text) that ``get`` unseals. A record is visible only when it is whole: a
torn tail left by a crash is ignored by readers and the writer's next record starts a new pack, so a
reader never sees part of a blob (the guarantee the write-then-rename of per-blob files gave). For the
same ref the last whole record wins.

Writers notice an erasure that happened under them (their pack's link count drops to zero) and write
the record again into a fresh pack: a capture racing an erasure is kept, as if it came after it.

Durability (``fsync=True``): ``put`` writes to the OS on the calling thread and remembers what is not
synced yet (packs written, directories made or renamed into place, by the paths they have now); the
journal syncs it before the records that name it (``_durability``: ``always`` before the append
returns, ``batch`` in the group commit, ``os`` at ``force_flush``/``close``). On Linux one ``syncfs``
covers every pending pack and directory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import struct
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Final

from loom_otel.core import _durability
from loom_otel.core._fork import renew_after_fork
from loom_otel.core._store._pool import Ready, ScopePool, discard, sweep
from loom_otel.core._store._protocol import (
    _MAGIC,
    _REF,
    DIGEST_KEY_BYTES,
    DIGEST_KEY_NAME,
    Envelope,
    _opens,
    _unseal,
    scope_of,
)
from loom_otel.core.exceptions import ReasoningConfigError

__all__ = ["FileReasoningStore"]

_FRAME: Final = struct.Struct(">8sHQ")
_FRAME_MAGIC: Final = b"LOOMPK1\n"
_OPEN_PACKS: Final = 64
"""Open pack files kept per store (one per recently written execution)."""
_PENDING_PACKS: Final = 4096
"""Packs written and not synced yet past which the writer syncs them itself (when no journal does)."""
_KNOWN_SCOPES: Final = 1024
"""Executions whose blob index is kept in memory (a long-running process captures for many)."""
_POOL_RETRY_SECONDS: Final = 30.0
"""How long after its pool of ready scope directories failed a writer tries to make a new one."""


class _Scope:
    """What this process knows of one scope's packs: ref -> (pack path, blob offset, blob length)."""

    __slots__ = ("entries", "exists", "scanned")

    def __init__(self) -> None:
        self.entries: dict[str, tuple[str, int, int]] = {}
        self.scanned: dict[str, int] = {}
        self.exists = True
        """Whether the scope's directory was there at the last look (a new execution's is not)."""

    def refresh(self, directory: str) -> None:
        """Index the whole records other writers appended since the last look (reads frames only)."""
        try:
            names = os.listdir(directory)  # one call; a scope nobody wrote yet costs one failed lookup
        except FileNotFoundError:
            self.entries.clear()
            self.scanned.clear()
            self.exists = False
            return
        self.exists = True
        for name in names:
            if not name.endswith(".pack"):
                continue
            path = f"{directory}/{name}"
            try:
                size = os.stat(path).st_size
            except FileNotFoundError:
                continue
            start = self.scanned.get(path, 0)
            if size > start:
                self.scanned[path] = _index_pack(path, start, size, self.entries)


def _index_pack(path: str, offset: int, size: int, into: dict[str, tuple[str, int, int]]) -> int:
    with open(path, "rb") as fh:
        fh.seek(offset)
        while offset + _FRAME.size <= size:
            magic, ref_len, blob_len = _FRAME.unpack(fh.read(_FRAME.size))
            end = offset + _FRAME.size + ref_len + blob_len
            if magic != _FRAME_MAGIC or end > size:
                break  # a torn tail (or garbage): nothing from here on is a whole record
            ref = fh.read(ref_len).decode("ascii", "replace")
            into[ref] = (path, offset + _FRAME.size + ref_len, blob_len)
            fh.seek(end)
            offset = end
    return offset


class _Pack:
    """One open pack of this writer: its descriptor, its path and where its next record starts."""

    __slots__ = ("end", "fd", "path")

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path
        self.end = 0


class FileReasoningStore:
    """The default store (``file:///dir``): sealed blobs in per-execution append-only packs.

    ``fsync=True`` (the default) syncs every blob no later than the journal record naming it, off the
    calling thread under the journal's ``batch`` durability (module docstring); ``fsync=False`` leaves
    durability to the OS (benchmarks only; also ``LOOM_OTEL_STORE_FSYNC=false``): a record is still
    never visible half written.
    """

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.root = Path(root).expanduser().absolute()
        self.fsync = fsync
        self._blobs = self.root / "blobs"
        self._blobs_dir = str(self._blobs)
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._pid = os.getpid()
        self._packs: OrderedDict[str, _Pack] = OrderedDict()
        self._scopes: OrderedDict[str, _Scope] = OrderedDict()
        renew_after_fork(self)
        self._dirty: set[str] = set()
        """Packs written since the last sync (by path: a pack closed meanwhile needs no descriptor)."""
        self._dirty_dirs: set[str] = set()
        """Directories whose entries changed since the last sync (a new pack, a new scope)."""
        self._pool: ScopePool | None = None
        """Ready scope directories (``_pool``), started at the first new execution this writer writes."""
        self._pool_finalizer: weakref.finalize[[ScopePool], FileReasoningStore] | None = None
        try:
            self._blobs.mkdir(parents=True, exist_ok=True)
            probe = self._blobs / f".probe-{uuid.uuid4().hex}"
            probe.write_bytes(b"")
            probe.unlink()
            sweep(self._blobs_dir)  # the ready scope directories of writers that died
        except OSError as exc:
            raise ReasoningConfigError(
                f"reasoning store directory {str(self.root)!r} is not a writable directory: "
                f"{exc.strerror or type(exc).__name__}"
            ) from None
        if fsync:
            _durability.register(self)
        _writers.add(self)

    # -- writing -------------------------------------------------------------------------------------

    def put(self, envelope: Envelope) -> str:
        ref = envelope.ref
        scope = ref[:32]
        with self._lock:
            known = self._scope(scope, writing=True)
            entry = known.entries.get(ref)
            if entry is not None:
                if os.path.exists(entry[0]):
                    return ref  # content-addressed: already kept
                self._scopes.pop(scope, None)  # erased by someone else since we looked
                self._drop_pack(scope)
            self._append(scope, ref, (_MAGIC, envelope.header(), envelope.body))
        return ref

    def _append(self, scope: str, ref: str, blob: tuple[bytes, ...]) -> None:
        ref_bytes = ref.encode("ascii")
        blob_len = sum(map(len, blob))
        chunks = (_FRAME.pack(_FRAME_MAGIC, len(ref_bytes), blob_len) + ref_bytes, *blob)
        size = _FRAME.size + len(ref_bytes) + blob_len
        for _ in range(2):
            pack = self._pack(scope)
            try:
                written = os.writev(pack.fd, chunks)
                if self.fsync:
                    self._dirty.add(pack.path)
                if written != size:
                    raise OSError(f"short write to reasoning pack ({written} bytes)")
            except BaseException:
                self._drop_pack(scope)  # the next record goes to a new pack: a torn tail stays a tail
                raise
            offset, pack.end = pack.end, pack.end + written
            if os.fstat(pack.fd).st_nlink > 0:
                known = self._scope(scope)
                known.entries[ref] = (pack.path, offset + _FRAME.size + len(ref_bytes), blob_len)
                known.scanned[pack.path] = pack.end
                return
            self._drop_pack(scope)  # erased while we wrote: write it again into a fresh pack
        raise OSError("reasoning pack was removed twice while being written")

    def _pack(self, scope: str) -> _Pack:
        """This writer's open pack for ``scope`` (new after a fork or an erasure).

        Only this writer appends to it, so its end is tracked here rather than asked of the OS; an
        erasure under it is noticed after the write (``_append``)."""
        self._after_fork()
        pack = self._packs.get(scope)
        if pack is not None:
            self._packs.move_to_end(scope)
            return pack
        directory = f"{self._blobs_dir}/{scope}"
        path = f"{directory}/{self._pid}-{os.urandom(6).hex()}.pack"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
        known = self._scopes.get(scope)
        if known is not None and not known.exists:  # a new execution: its directory straight away
            known.exists = True
            if self._new_scope_dir(scope) and (pack := self._packs.get(scope)) is not None:
                return pack  # a ready one, with its pack
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:  # removed since we looked: the directory is made again
            self._make_scope_dir(directory)
            fd = os.open(path, flags, 0o600)
        if self.fsync:
            self._dirty_dirs.add(directory)
        return self._keep_pack(scope, _Pack(fd, path))

    def _keep_pack(self, scope: str, pack: _Pack) -> _Pack:
        self._packs[scope] = pack
        while len(self._packs) > _OPEN_PACKS:
            _, old = self._packs.popitem(last=False)
            self._release(old)
        return pack

    def _new_scope_dir(self, scope: str) -> bool:
        """Make ``scope``'s directory for a write; ``False`` when it was there already.

        A ready directory from the pool is renamed into place, and its pack becomes this writer's open
        pack for the scope; a rename onto a directory that holds anything fails, so the entry goes
        back to the pool and the existing directory is used. With none ready, ``mkdir`` here."""
        self._after_fork()
        directory = f"{self._blobs_dir}/{scope}"
        ready = self._take_ready()
        if ready is None:
            return self._make_scope_dir(directory)
        try:
            os.rename(ready.directory, directory)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST) and self._pool is not None:
                self._pool.give_back(ready)  # the execution has a directory: another writer's, or an earlier run's
                return False
            discard(ready)  # the entry or the blobs directory is gone: the calling thread makes it
            return self._make_scope_dir(directory)
        if self.fsync:  # the scope's entry in ``blobs/`` and the pack's entry in the scope, by their new paths
            self._dirty_dirs.add(self._blobs_dir)
            self._dirty_dirs.add(directory)
        self._keep_pack(scope, _Pack(ready.fd, f"{directory}/{ready.pack}"))
        return True

    def _take_ready(self) -> Ready | None:
        """A ready scope directory, or ``None`` (none ready yet, or the pool failed: retried later)."""
        pool = self._pool
        if pool is not None and pool.failed_at is None:
            return pool.take()
        if pool is not None and pool.failed_at is not None:
            if time.monotonic() - pool.failed_at < _POOL_RETRY_SECONDS:
                return None
            self._close_pool()
        self._start_pool()
        return None  # it fills in the background: this execution makes its own

    def _start_pool(self) -> ScopePool:
        pool = self._pool = ScopePool(self._blobs_dir)
        self._pool_finalizer = weakref.finalize(self, ScopePool.close, pool)  # a store dropped unclosed
        return pool

    def _close_pool(self) -> None:
        """Remove this writer's pool (its entries hold no data); a later new execution starts another."""
        finalizer, self._pool_finalizer, self._pool = self._pool_finalizer, None, None
        if finalizer is not None:
            finalizer()

    def _make_scope_dir(self, directory: str) -> bool:
        """Make a scope's directory; ``False`` when it was there already."""
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            return False
        except FileNotFoundError:  # the blobs directory itself was removed
            os.makedirs(directory, exist_ok=True)
        if self.fsync:
            self._dirty_dirs.add(self._blobs_dir)
        return True

    def _after_fork_in_child(self) -> None:
        """A forked child: a lock another thread of the parent held (a sync takes milliseconds) is free
        again, and the parent's packs and unsynced writes stay the parent's."""
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._after_fork()

    def _after_fork(self) -> None:
        if self._pid != os.getpid():
            self._pid = os.getpid()
            # A forked child writes its own packs; syncing the parent's writes is the parent's work.
            self._packs.clear()
            self._dirty.clear()
            self._dirty_dirs.clear()
            # The parent's pool is the parent's: close the inherited descriptors, start one lazily.
            if self._pool_finalizer is not None:
                self._pool_finalizer.detach()
            if self._pool is not None:
                self._pool.forget()
            self._pool, self._pool_finalizer = None, None

    def _drop_pack(self, scope: str) -> None:
        pack = self._packs.pop(scope, None)
        if pack is not None:
            self._release(pack)

    def _release(self, pack: _Pack) -> None:
        os.close(pack.fd)
        if len(self._dirty) > _PENDING_PACKS:  # nobody syncs (journal durability ``os``): do it here
            self._sync_taken(self._dirty, self._dirty_dirs)
            self._dirty, self._dirty_dirs = set(), set()

    # -- durability ----------------------------------------------------------------------------------

    def sync_pending(self) -> None:
        """Sync every blob and directory written so far (``_durability``: the journal calls this before
        syncing its records). ``OSError`` leaves them pending for the next call. One sync at a time: a
        caller returns only after a concurrent caller's sync of earlier writes has finished too."""
        with self._sync_lock:
            with self._lock:
                self._after_fork()
                if not (self._dirty or self._dirty_dirs):
                    return
                paths, self._dirty = self._dirty, set()
                dirs, self._dirty_dirs = self._dirty_dirs, set()
            try:
                self._sync_taken(paths, dirs)  # outside the store's lock: writers go on meanwhile
            except BaseException:
                with self._lock:
                    self._dirty |= paths
                    self._dirty_dirs |= dirs
                raise

    def _sync_taken(self, paths: set[str], dirs: set[str]) -> None:
        try:
            synced = _durability.sync_filesystem(self._blobs_dir)
        except FileNotFoundError:  # the store's directory is gone, and with it what was pending
            synced = True
        if not synced:
            for path in sorted(paths) + sorted(dirs, key=len, reverse=True):  # the blobs directory last
                with contextlib.suppress(FileNotFoundError):  # erased since: nothing of it is left to keep
                    _fsync_path(path)

    def _scope(self, scope: str, *, writing: bool = False) -> _Scope:
        """What this writer knows of ``scope``; ``writing``: a scope it does not know yet is made at once
        (one ``rename`` of a ready directory, or one ``mkdir``, tells a new execution, which has nothing
        to index, from one to read from disk)."""
        known = self._scopes.get(scope)
        if known is None:
            known = self._scopes[scope] = _Scope()
            if not (writing and self._new_scope_dir(scope)):
                known.refresh(f"{self._blobs_dir}/{scope}")
            if len(self._scopes) > _KNOWN_SCOPES:
                self._scopes.popitem(last=False)  # the least recently used: read again from disk if needed
        else:
            self._scopes.move_to_end(scope)
        return known

    # -- reading -------------------------------------------------------------------------------------

    def _locate(self, ref: str) -> tuple[str, int, int] | None:
        if _REF.match(ref) is None:
            return None
        scope = ref[:32]
        with self._lock:
            known = self._scope(scope)
            known.refresh(f"{self._blobs_dir}/{scope}")
            return known.entries.get(ref)

    def _read(self, ref: str) -> bytes | None:
        where = self._locate(ref)
        if where is None:
            return None
        path, offset, length = where
        try:
            with open(path, "rb") as fh:
                fh.seek(offset)
                data = fh.read(length)
        except FileNotFoundError:
            return None
        return data if len(data) == length else None

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        if not _opens(ref, tenant, execution_id):
            return None
        blob = self._read(ref)
        return None if blob is None else _unseal(blob, tenant, execution_id)

    def exists(self, ref: str) -> bool:
        return self._locate(ref) is not None

    def sealed_blob(self, ref: str) -> bytes | None:
        """The sealed bytes stored at ``ref`` (audit and fault-injection use; not unsealed)."""
        return self._read(ref)

    def write_sealed_blob(self, ref: str, blob: bytes) -> None:
        """Append raw sealed bytes as the newest record for ``ref`` (tests simulating disk faults)."""
        if _REF.match(ref) is None:
            raise ValueError("not a reasoning ref")
        with self._lock:
            self._append(ref[:32], ref, (blob,))

    # -- removing ------------------------------------------------------------------------------------

    def delete(self, ref: str) -> None:
        """Remove one blob: its scope's packs are rewritten without it (rare; erasure is by scope)."""
        if _REF.match(ref) is None:
            return
        scope = ref[:32]
        directory = f"{self._blobs_dir}/{scope}"
        with self._lock:
            self._drop_pack(scope)
            self._scopes.pop(scope, None)
            try:
                packs = sorted(name for name in os.listdir(directory) if name.endswith(".pack"))
            except FileNotFoundError:
                return
            for name in packs:  # every copy of the ref, not only the newest
                _rewrite_without(f"{directory}/{name}", ref)

    def erase_execution(self, tenant: str | None, execution_id: str) -> int:
        scope = scope_of(tenant, execution_id)
        directory = f"{self._blobs_dir}/{scope}"
        with self._lock:
            self._drop_pack(scope)
            self._scopes.pop(scope, None)
            known = _Scope()
            known.refresh(directory)
            shutil.rmtree(directory, ignore_errors=True)
        return len(known.entries)

    # -- digest keys ---------------------------------------------------------------------------------

    def digest_key(self, tenant: str | None, execution_id: str, *, create: bool = False) -> bytes | None:
        directory = self._blobs / scope_of(tenant, execution_id)
        path = directory / DIGEST_KEY_NAME
        try:
            return path.read_bytes()
        except FileNotFoundError:
            if not create:
                return None
        directory.mkdir(exist_ok=True)
        tmp = directory / f".tmp-{uuid.uuid4().hex}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, os.urandom(DIGEST_KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # create-if-absent: a concurrent writer's key wins, and both use it
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
        _fsync_path(str(directory))
        return path.read_bytes()

    def close(self) -> None:
        """Sync what is pending (``fsync``), close this writer's packs and remove its ready scope
        directories (a later ``put`` reopens and starts another pool)."""
        with self._lock:
            for scope in list(self._packs):
                self._drop_pack(scope)
            self._after_fork()
            self._close_pool()
        if self.fsync:
            self.sync_pending()

    def __repr__(self) -> str:
        return f"FileReasoningStore({str(self.root)!r})"


_writers: weakref.WeakSet[FileReasoningStore] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for store in list(_writers):
        store._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _rewrite_without(path: str, ref: str) -> None:
    """Copy every whole record of ``path`` except ``ref``'s to a new file and rename it over (a pack
    without ``ref`` is left as it is)."""
    kept: list[tuple[int, int]] = []
    found = False
    size = os.stat(path).st_size
    offset = 0
    with open(path, "rb") as fh:
        while offset + _FRAME.size <= size:
            fh.seek(offset)
            magic, ref_len, blob_len = _FRAME.unpack(fh.read(_FRAME.size))
            end = offset + _FRAME.size + ref_len + blob_len
            if magic != _FRAME_MAGIC or end > size:
                break
            if fh.read(ref_len).decode("ascii", "replace") == ref:
                found = True
            else:
                kept.append((offset, end - offset))
            offset = end
        if not found:
            return
        tmp = f"{path}.rewrite-{uuid.uuid4().hex[:8]}"
        with open(tmp, "wb") as out:
            for start, length in kept:
                fh.seek(start)
                out.write(fh.read(length))
            out.flush()
            os.fsync(out.fileno())
    os.replace(tmp, path)


def _fsync_path(path: str) -> None:
    """``fsync`` a pack or a directory by its path (a descriptor opened read-only syncs the same inode)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
