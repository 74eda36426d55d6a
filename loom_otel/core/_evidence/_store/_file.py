"""``FileReasoningStore``: sealed blobs in append-only pack files.

Where a blob goes depends on who named its execution (``Envelope.named``):

- an execution the application named (``execution()``): ``root/blobs/<scope>/<writer>.pack``, one
  directory per (tenant, execution), plus ``root/blobs/<scope>/.digest-key`` (keyed digests). A rerun
  captures into it again: its directory is found in one lookup, and ``put`` stores nothing new;
- an execution loom-otel named itself (a new conversation without ``execution()``, named by its trace id,
  and the later calls that joined one by their history): ``root/packs/<shard>/<writer>.pack``, the
  writer's pack in one of 64 shards chosen by the scope. No file-system object is made per
  conversation, so a new conversation per call costs the same ``writev`` as a continuing one; nothing
  reruns into such an execution, so nothing is looked up before writing.

Reads index the scope's directory and the scope's records in its shard (frames only, from where the
last look stopped; a scope dropped from the in-memory index keeps a bookmark of where its records
start, so a conversation resumed later is not looked for in the records written before it). The shared
records a writer wrote into a scope it never read are kept by ref alone (``_written``, the newest
``_WRITTEN``), not in a per-scope index: a new conversation per call adds one entry, not an index.
Erasure removes the scope's directory and overwrites the scope's records in its shard in place (frame
marked erased, ref and blob zeroed, then synced): no text is left in any file.

Each process appends to its own packs, so a capture costs one ``writev`` on an open file. A new named
execution's directory and pack come ready-made: a writer keeps a pool of them in a private dot-directory
(``blobs/.pools/.ready-<pid>-<random>``, filled by a background thread; ``_pool``) and renames one to
``blobs/<scope>`` at the execution's first blob, so a new ``execution()`` costs one ``rename`` on the
calling thread instead of a ``mkdir`` and an ``open(O_CREAT)``. The rename fails when the execution
already has a directory (another writer's, an earlier run's): that one is indexed and used. Everything
that lists ``blobs/`` skips dot-entries; ``close`` removes the writer's pool, and a writer that died
leaves one that the next store on the root removes (its ``flock`` is free). The pool also holds empty
packs for the shards: from a writer's first shared record on, it makes one per shard the writer has no
pack in yet, and the writer's first record in a shard renames one there, instead of an ``open(O_CREAT)``
in nearly every shard over a fresh writer's first few hundred new conversations.

A pack record is ``FRAME(magic, ref length, blob length) | ref | blob``; the blob is the sealed form
(``LOOMR1\\n`` + header + UTF-8 text) that ``get`` unseals. A record is visible only when it is whole: a
torn tail left by a crash is ignored by readers and the writer's next record starts a new pack, so a
reader never sees part of a blob (the guarantee the write-then-rename of per-blob files gave). For the
same ref the last whole record wins; a read checks the record's frame and ref where it was indexed, so
one erased by another process meanwhile reads as nothing.

Writers notice an erasure that removed their pack under them (its link count drops to zero) and write
the record again into a fresh pack: a capture racing an erasure is kept, as if it came after it.

Durability (``fsync=True``): ``put`` writes to the OS on the calling thread and remembers what is not
synced yet (packs written, directories made or renamed into place, by the paths they have now); the
journal syncs it before the records that name it (``_durability``: ``always`` before the append
returns, ``batch`` in the group commit, ``os`` at ``force_flush``/``close``), each file and directory by
itself: never the rest of the file system (another program's writes).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import shutil
import struct
import threading
import time
import uuid
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NamedTuple, TypeVar

from loom_otel.core._evidence import _durability
from loom_otel.core._evidence._store._pool import PACK_FLAGS, Ready, ReadyPack, ScopePool, discard, pack_name, sweep
from loom_otel.core._evidence._store._protocol import (
    DIGEST_KEY_BYTES,
    DIGEST_KEY_NAME,
    Envelope,
    scope_of,
)
from loom_otel.core._evidence._store._sealed import REF, Unsealed, opens, unseal_audience
from loom_otel.core._evidence._syncer import sync_paths as _sync_paths
from loom_otel.core._runtime._fork import renew_after_fork
from loom_otel.core.exceptions import ReasoningConfigError

__all__ = ["FileReasoningStore", "PackGap"]

_FRAME: Final = struct.Struct(">8sHQI")
"""A record's frame (written since version 2): magic, ref length, blob length, CRC-32 of the ref and blob."""
_FRAME_MAGIC: Final = b"LOOMPK2\n"
_ERASED_MAGIC: Final = b"LOOMPZ2\n"
"""The frame of a record erased in place: its ref and blob are zeros (the CRC is theirs), its length stays."""
_FRAME_V1: Final = struct.Struct(">8sHQ")
"""The frame of packs written before version 2 (no checksum): still read, and erased in place."""
_FRAME_MAGIC_V1: Final = b"LOOMPK1\n"
_ERASED_MAGIC_V1: Final = b"LOOMPK0\n"
_FRAMES: Final = {
    _FRAME_MAGIC: (_FRAME, False),
    _ERASED_MAGIC: (_FRAME, True),
    _FRAME_MAGIC_V1: (_FRAME_V1, False),
    _ERASED_MAGIC_V1: (_FRAME_V1, True),
}
"""magic -> (its frame, whether the record is erased)."""
_RESYNC_READ: Final = 1 << 20
"""Bytes read at a time while looking for the next whole record after a gap."""
_OPEN_PACKS: Final = 128
"""Open pack files kept per store (the 64 shared shards, and recently written named executions)."""
_PENDING_PACKS: Final = 4096
"""Packs written and not synced yet past which the writer syncs them itself (when no journal does)."""
_KNOWN_SCOPES: Final = 1024
"""Executions whose blob index is kept in memory (a long-running process captures for many)."""
_BOOKMARKS: Final = 16384
"""Executions dropped from the index whose bookmark is kept: where indexing them again may start."""
_WRITTEN: Final = 4096
"""Shared records this writer wrote into scopes it has not indexed, kept by ref (the newest ones)."""
_SHARDS: Final = tuple(f"{n:02x}" for n in range(64))
"""The shards of the shared packs, by name (``shard_of``)."""
_POOL_RETRY_SECONDS: Final = 30.0
"""How long after its pool of ready scope directories failed a writer tries to make a new one."""


_T = TypeVar("_T")
_Entry = tuple[str, int, int]
"""Where a record is: (pack path, record offset, blob length)."""


class _Scope:
    """What this process knows of one scope's blobs: ref -> where (``_Entry``)."""

    __slots__ = ("entries", "exists", "scanned")

    def __init__(self) -> None:
        self.entries: dict[str, _Entry] = {}
        self.scanned: dict[str, int] = {}
        self.exists = True
        """Whether the scope's directory was there at the last look (a new execution's is not)."""

    def refresh(self, blobs_dir: str, packs_dir: str, scope: str, *, shared: bool = True) -> None:
        """Index the whole records other writers appended since the last look (reads frames only): in the
        scope's directory and, with ``shared``, the scope's records in its shard of the shared packs."""
        directory = f"{blobs_dir}/{scope}"
        try:
            names = os.listdir(directory)  # one call; a scope nobody wrote yet costs one failed lookup
        except FileNotFoundError:
            self.exists = False
            self._forget(directory + "/")
        else:
            self.exists = True
            self._index(directory, names, None)
        if shared:
            shard = f"{packs_dir}/{shard_of(scope)}"
            try:
                names = os.listdir(shard)
            except FileNotFoundError:
                return
            self._index(shard, names, scope + "/")

    def add(self, ref: str, entry: _Entry, end: int) -> None:
        """A record this writer appended (its pack now ends at ``end``)."""
        self.entries[ref] = entry
        path, offset, _ = entry
        if self.scanned.get(path, 0) == offset:  # nothing unindexed before it
            self.scanned[path] = end

    def _index(self, directory: str, names: list[str], prefix: str | None) -> None:
        for name in names:
            if not name.endswith(".pack"):
                continue
            path = f"{directory}/{name}"
            start = self.scanned.get(path, 0)
            try:
                size = os.stat(path).st_size
                if size <= start:
                    continue
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            gaps: list[tuple[int, int]] = []
            try:
                end = start
                for record in _records(fd, start, size, gaps=gaps):
                    ref = record.ref
                    if ref is not None and (prefix is None or ref.startswith(prefix)):
                        self.entries[ref] = (path, record.offset, record.blob_len)
                    end = record.end
            finally:
                os.close(fd)
            # From the first gap on, looked at again next time: it may be a write still under way.
            self.scanned[path] = gaps[0][0] if gaps else end

    def bookmark(self) -> tuple[str | int, ...]:
        """Where indexing this scope again may start in each pack, with nothing of it missed: before its
        first record there, else where the last look stopped. Without one, a scope dropped from the
        index and read again would read every frame of its shard from the start (a resumed
        conversation of a long-running process, whose own pack holds every conversation since).

        Flat (path, start, path, start, ...): one tuple, kept for long, per scope dropped."""
        starts = dict(self.scanned)
        for path, offset, _ in self.entries.values():
            if offset < starts.get(path, offset + 1):
                starts[path] = offset
        return tuple(itertools.chain.from_iterable(starts.items()))

    def resume(self, bookmark: tuple[str | int, ...]) -> None:
        """Index from a ``bookmark`` on (the scope was dropped from the index)."""
        for i in range(0, len(bookmark), 2):
            path, start = bookmark[i], bookmark[i + 1]
            assert isinstance(path, str) and isinstance(start, int)
            self.scanned[path] = start

    def _forget(self, prefix: str) -> None:
        """The directory is gone (erased): nothing indexed in it is there any more."""
        for ref in [ref for ref, entry in self.entries.items() if entry[0].startswith(prefix)]:
            del self.entries[ref]
        for path in [path for path in self.scanned if path.startswith(prefix)]:
            del self.scanned[path]


def shard_of(scope: str) -> str:
    """The shard of the shared packs that holds a scope's blobs: the top six bits of its first byte
    (64 shards, so reading or erasing one execution reads the frames of 1/64 of them)."""
    return _SHARDS[int(scope[:2], 16) >> 2]


_HEAD_READ: Final = _FRAME.size + 128
"""Bytes read per record while indexing: the frame and a ref (97 characters) in one ``pread``."""


class _Found(NamedTuple):
    """A whole record of a pack: where it starts, its ref (``None`` when erased), its blob's length, where
    it ends, and its frame (the version it was written in: an erasure writes the same)."""

    offset: int
    ref: str | None
    blob_len: int
    end: int
    frame: struct.Struct


def _frame_at(head: bytes, offset: int, size: int) -> tuple[struct.Struct, bool, int, int, int] | None:
    """The frame that ``head`` (read at ``offset``) starts with, when it is one and its record fits in
    ``size``: (frame, erased, ref length, blob length, record end); ``None`` otherwise."""
    known = _FRAMES.get(head[:8])
    if known is None:
        return None
    frame, erased = known
    if len(head) < frame.size:
        return None
    _, ref_len, blob_len = frame.unpack_from(head)[:3]
    end = offset + frame.size + ref_len + blob_len
    return None if end > size else (frame, erased, ref_len, blob_len, end)


def _checksum_holds(fd: int, offset: int, frame: struct.Struct, ref_len: int, blob_len: int) -> bool:
    """Whether a version-2 record's ref and blob are what its frame's CRC says (whole, as written)."""
    if frame is not _FRAME:
        return True  # version 1 carries none: its frame is all there is to check
    data = os.pread(fd, frame.size + ref_len + blob_len, offset)
    crc = _FRAME.unpack_from(data)[3] if len(data) >= _FRAME.size else -1
    return zlib.crc32(memoryview(data)[_FRAME.size :]) == crc


def _next_record(fd: int, offset: int, size: int) -> int | None:
    """Where the next whole version-2 record starts after a gap at ``offset``: a frame whose record fits
    and whose checksum holds (a gap's own bytes, or a text quoting a frame, do not pass). ``None``: none."""
    position = offset + 1
    while position + _FRAME.size <= size:
        chunk = os.pread(fd, _RESYNC_READ + _FRAME.size, position)
        if len(chunk) < _FRAME.size:
            return None
        hits = [at for at in (chunk.find(_FRAME_MAGIC), chunk.find(_ERASED_MAGIC)) if at >= 0]
        if not hits:
            position += max(1, len(chunk) - _FRAME.size)
            continue
        at = position + min(hits)
        found = _frame_at(os.pread(fd, _FRAME.size, at), at, size)
        if found is not None and _checksum_holds(fd, at, found[0], found[2], found[3]):
            return at
        position = at + 1
    return None


def _records(
    fd: int, offset: int, size: int, *, gaps: list[tuple[int, int]] | None = None, check: bool = False
) -> Iterator[_Found]:
    """The whole records of a pack from ``offset``, one ``pread`` each (the blobs are skipped, never read,
    unless ``check``: then every checksum is checked). Bytes that are no whole record (a write that
    failed, one still under way in another thread, a torn tail) are a gap: it is skipped to the next
    whole record and, with ``gaps``, listed there as (start, end)."""
    while offset < size:
        head = os.pread(fd, _HEAD_READ, offset)
        found = _frame_at(head, offset, size)
        if found is None or (check and not _checksum_holds(fd, offset, found[0], found[2], found[3])):
            following = _next_record(fd, offset, size)
            if gaps is not None:
                gaps.append((offset, size if following is None else following))
            if following is None:
                return
            offset = following
            continue
        frame, erased, ref_len, blob_len, end = found
        ref: str | None = None
        if not erased:
            raw = head[frame.size : frame.size + ref_len]
            if len(raw) < ref_len:
                raw = os.pread(fd, ref_len, offset + frame.size)
            ref = raw.decode("ascii", "replace")
        yield _Found(offset, ref, blob_len, end, frame)
        offset = end


def _record(entry: _Entry, ref: str, *, body: bool = True) -> bytes | None:
    """The blob of ``ref`` at ``entry`` if a whole, unerased record of it is still there (``b""`` with
    ``body=False``: only its frame and ref are read, not the checksum); ``None`` otherwise (erased,
    removed, rewritten, a write that failed)."""
    path, offset, blob_len = entry
    ref_bytes = ref.encode("ascii")
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        data = os.pread(fd, _FRAME.size + len(ref_bytes) + (blob_len if body else 0), offset)
    finally:
        os.close(fd)
    known = _FRAMES.get(data[:8])
    if known is None or known[1]:
        return None
    frame = known[0]
    head = frame.size + len(ref_bytes)
    if len(data) < head or frame.unpack_from(data)[1:3] != (len(ref_bytes), blob_len):
        return None
    if data[frame.size : head] != ref_bytes:
        return None
    if not body:
        return b""
    blob = data[head : head + blob_len]
    if len(blob) != blob_len:
        return None
    if frame is _FRAME and zlib.crc32(memoryview(data)[frame.size : head + blob_len]) != frame.unpack_from(data)[3]:
        return None
    return blob


def _frame(ref_bytes: bytes, blob: tuple[bytes, ...]) -> tuple[bytes, int]:
    """A record's frame and ref (what precedes its blob), and the record's size."""
    blob_len = sum(map(len, blob))
    crc = zlib.crc32(ref_bytes)
    for chunk in blob:
        crc = zlib.crc32(chunk, crc)
    return _FRAME.pack(_FRAME_MAGIC, len(ref_bytes), blob_len, crc) + ref_bytes, blob_len


def _write_at(fd: int, chunks: tuple[bytes, ...], offset: int, size: int) -> None:
    """Write a record at ``offset`` (reserved for it); ``OSError`` when it cannot be written whole."""
    written = os.pwritev(fd, chunks, offset)
    if written < size:  # rare (a signal, a nearly full disk): the rest, then an error if it cannot
        rest = memoryview(b"".join(chunks))[written:]
        while rest:
            more = os.pwrite(fd, rest, offset + written)
            if more <= 0:
                raise OSError(errno.ENOSPC, f"short write to reasoning pack ({written} of {size} bytes)")
            written += more
            rest = rest[more:]


def _erase_records(directory: str, erased: Callable[[str], bool]) -> set[str]:
    """Overwrite, in place, every whole record under ``directory`` whose ref ``erased`` selects: its frame
    is marked erased and its ref and blob become zeros (then synced). Records appended meanwhile are
    after the erasure. Returns the refs erased."""
    found: set[str] = set()
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return found
    for name in names:
        if not name.endswith(".pack"):
            continue
        try:
            fd = os.open(f"{directory}/{name}", os.O_RDWR)  # not O_APPEND: ``pwrite`` writes in place
        except FileNotFoundError:
            continue
        try:
            changed = False
            for record in _records(fd, 0, os.fstat(fd).st_size):
                ref = record.ref
                if ref is not None and erased(ref):
                    zeros = bytes(len(ref) + record.blob_len)
                    if record.frame is _FRAME:
                        frame = _FRAME.pack(_ERASED_MAGIC, len(ref), record.blob_len, zlib.crc32(zeros))
                    else:
                        frame = _FRAME_V1.pack(_ERASED_MAGIC_V1, len(ref), record.blob_len)
                    os.pwrite(fd, frame + zeros, record.offset)
                    found.add(ref)
                    changed = True
            if changed:
                os.fsync(fd)
        finally:
            os.close(fd)
    return found


@dataclass(frozen=True, slots=True)
class PackGap:
    """Bytes of a pack that are no whole record (``FileReasoningStore.pack_gaps``): the pack's path under
    the store's root, where the gap starts and how long it is."""

    pack: str
    offset: int
    length: int


class _Pack:
    """One open pack of this writer: its descriptor, its path, where its next record starts (reserved
    under the store's lock), and how many writes to it are under way outside the lock: a pack dropped
    meanwhile (``released``) is closed by the last of them."""

    __slots__ = ("end", "fd", "path", "released", "users")

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path
        self.end = 0
        self.users = 0
        self.released = False


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
        self._packs_dir = str(self.root / "packs")
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._pid = os.getpid()
        self._packs: OrderedDict[str, _Pack] = OrderedDict()
        """This writer's open packs, by the directory they are in (a named scope's, or a shard's)."""
        self._scopes: OrderedDict[str, _Scope] = OrderedDict()
        self._bookmarks: OrderedDict[str, tuple[str | int, ...]] = OrderedDict()
        """``_Scope.bookmark`` of the scopes dropped from ``_scopes``, the newest ``_BOOKMARKS``."""
        self._written: OrderedDict[str, _Entry] = OrderedDict()
        """Shared records this writer wrote into scopes not in ``_scopes``: ref -> where (``_remember``)."""
        renew_after_fork(self)
        self._dirty: set[str] = set()
        """Packs written since the last sync (by path: a pack closed meanwhile needs no descriptor)."""
        self._dirty_dirs: set[str] = set()
        """Directories whose entries changed since the last sync (a new pack, a new scope)."""
        self._pool: ScopePool | None = None
        """Ready scope directories and shard packs (``_pool``), started at the first new execution or the
        first shared record this writer writes."""
        self._pool_finalizer: weakref.finalize[[ScopePool], FileReasoningStore] | None = None
        self._shard_packs_asked = False
        """Whether the pool was asked for a ready pack per shard this writer has none in."""
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
        _writers.add(self)

    # -- writing -------------------------------------------------------------------------------------

    def put(self, envelope: Envelope) -> str:
        ref = envelope.ref
        scope = ref[:32]
        blob = envelope.sealed()
        ref_bytes = ref.encode("ascii")
        frame, blob_len = _frame(ref_bytes, blob)  # the checksum outside the lock
        with self._lock:
            if envelope.named:
                known: _Scope | None = self._scope(scope, writing=True)
                home = f"{self._blobs_dir}/{scope}"
            else:  # a scope this writer read is indexed; else only what it wrote there is known
                known = self._scopes.get(scope)
                home = self._shard_dir(scope)
            entries = self._written if known is None else known.entries
            entry = entries.get(ref)
        if entry is not None:  # read outside the lock: a system call there makes the other threads wait
            if _record(entry, ref, body=False) is not None:
                return ref  # content-addressed: already kept
            with self._lock:
                if entries.get(ref) == entry:
                    del entries[ref]  # erased by someone else since we looked
        self._append(known, home, ref, (frame, *blob), blob_len, named=envelope.named)
        return ref

    def _append(
        self, known: _Scope | None, home: str, ref: str, chunks: tuple[bytes, ...], blob_len: int, *, named: bool
    ) -> None:
        """Write one record (``chunks``: frame and ref, then the blob) into this writer's pack in ``home``
        (a named scope's directory, or a shard) and index it. The record's place is reserved under the
        lock and written outside it (``pwritev``), so threads write side by side; a write that fails
        leaves a gap that readers skip (``_records``), and the next records go to a new pack. An
        erasure removes a named scope's packs, so one may be gone by the time the record is in it; a
        shard's packs are never removed (erasure overwrites records in place)."""
        size = sum(map(len, chunks))
        for _ in range(2):
            with self._lock:
                pack = self._pack(home, known, named=named)
                offset, pack.end = pack.end, pack.end + size
                pack.users += 1
            try:
                _write_at(pack.fd, chunks, offset, size)
                gone = named and os.fstat(pack.fd).st_nlink == 0
            except BaseException:
                with self._lock:
                    self._done_with(pack)
                    self._drop_pack(home, pack)  # the next record goes to a new pack: the gap stays a gap
                raise
            with self._lock:
                self._done_with(pack)
                if gone:
                    self._drop_pack(home, pack)  # erased while we wrote: write it again into a fresh pack
                    continue
                if self.fsync:  # only once written: a sync taken meanwhile did not cover it
                    self._dirty.add(pack.path)
                entry = (pack.path, offset, blob_len)
                if known is None:
                    self._remember(ref, entry)
                else:
                    known.add(ref, entry, offset + size)
            if self.fsync:
                _durability.pending(self)
            return
        raise OSError("reasoning pack was removed twice while being written")

    def _remember(self, ref: str, entry: _Entry) -> None:
        """Keep where a shared record of an unindexed scope is; the oldest one dropped leaves its scope
        a bookmark at that record (its first in this writer's pack: they are dropped in the order
        written), unless the scope has a better one (indexed, or dropped with a bookmark already)."""
        written = self._written
        written[ref] = entry
        if len(written) > _WRITTEN:
            dropped, (path, offset, _) = written.popitem(last=False)
            scope = dropped[:32]
            if scope not in self._scopes and scope not in self._bookmarks:
                self._bookmarks[scope] = (path, offset)
                if len(self._bookmarks) > _BOOKMARKS:
                    self._bookmarks.popitem(last=False)

    def _pack(self, home: str, known: _Scope | None, *, named: bool) -> _Pack:
        """This writer's open pack in ``home`` (new after a fork, ``_after_fork_in_child``, or an erasure).

        Only this writer appends to it, so its end is tracked here rather than asked of the OS; an
        erasure under it is noticed after the write (``_append``)."""
        pack = self._packs.get(home)
        if pack is not None:
            self._packs.move_to_end(home)
            return pack
        if named and known is not None and not known.exists:  # a new named execution: its directory now
            known.exists = True
            if self._new_scope_dir(home) and (pack := self._packs.get(home)) is not None:
                return pack  # a ready one, with its pack
        elif not named and (ready := self._ready_shard_pack(home)) is not None:
            return ready
        path = f"{home}/{pack_name(self._pid)}"
        fd = self._in_dir(home, lambda: os.open(path, PACK_FLAGS, 0o600))
        if self.fsync:
            self._dirty_dirs.add(home)
        return self._keep_pack(home, _Pack(fd, path))

    def _ready_shard_pack(self, home: str) -> _Pack | None:
        """A ready pack from the pool, renamed into shard ``home`` (where this writer has none); ``None``:
        none ready (the first time, the pool is asked for one per shard still without a pack)."""
        pool = self._running_pool()
        if pool is None:
            return None
        if not self._shard_packs_asked:
            self._shard_packs_asked = True
            shards = (f"{self._packs_dir}/{shard}" for shard in _SHARDS)
            missing = [shard for shard in shards if shard != home and shard not in self._packs]
            pool.want_packs(len(missing), missing)  # this one is opened here: none is ready yet
            return None
        ready = pool.take_pack()
        return None if ready is None else self._adopt(home, ready)

    def _adopt(self, home: str, ready: ReadyPack) -> _Pack | None:
        """Rename a ready pack into ``home``; ``None`` (the pack closed and removed) when it cannot be."""
        path = f"{home}/{os.path.basename(ready.path)}"
        try:
            self._in_dir(home, lambda: os.rename(ready.path, path))
        except OSError:
            os.close(ready.fd)
            with contextlib.suppress(OSError):
                os.unlink(ready.path)
            return None
        if self.fsync:  # the pack's entry in the shard, the shard's and ``packs``' (the pool may have made both)
            self._dirty_dirs.add(home)
            self._dirty_dirs.add(self._packs_dir)
            self._dirty_dirs.add(str(self.root))
        return self._keep_pack(home, _Pack(ready.fd, path))

    def _in_dir(self, home: str, make: Callable[[], _T]) -> _T:
        """``make()``, an entry made in ``home``, after making ``home`` when it is missing: a shard not
        made yet, or a named scope's directory removed since we looked (an erasure)."""
        try:
            return make()
        except FileNotFoundError:
            self._make_dir(home)
            return make()

    def _shard_dir(self, scope: str) -> str:
        return f"{self._packs_dir}/{shard_of(scope)}"

    def _keep_pack(self, home: str, pack: _Pack) -> _Pack:
        self._packs[home] = pack
        while len(self._packs) > _OPEN_PACKS:
            _, old = self._packs.popitem(last=False)
            self._release(old)
        return pack

    def _new_scope_dir(self, directory: str) -> bool:
        """Make a named scope's directory for a write; ``False`` when it was there already.

        A ready directory from the pool is renamed into place, and its pack becomes this writer's open
        pack for the scope; a rename onto a directory that holds anything fails, so the entry goes
        back to the pool and the existing directory is used. With none ready, ``mkdir`` here."""
        self._after_fork()
        ready = self._take_ready()
        if ready is None:
            return self._make_dir(directory)
        try:
            os.rename(ready.directory, directory)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST) and self._pool is not None:
                self._pool.give_back(ready)  # the execution has a directory: another writer's, or an earlier run's
                return False
            discard(ready)  # the entry or the blobs directory is gone: the calling thread makes it
            return self._make_dir(directory)
        if self.fsync:  # the scope's entry in ``blobs/`` and the pack's entry in the scope, by their new paths
            self._dirty_dirs.add(self._blobs_dir)
            self._dirty_dirs.add(directory)
        self._keep_pack(directory, _Pack(ready.fd, f"{directory}/{ready.pack}"))
        return True

    def _take_ready(self) -> Ready | None:
        """A ready scope directory, or ``None`` (none ready yet, or the pool failed: retried later)."""
        pool = self._running_pool()
        return None if pool is None else pool.take()

    def _running_pool(self) -> ScopePool | None:
        """This writer's pool; started when there is none, restarted ``_POOL_RETRY_SECONDS`` after it
        failed (``None`` meanwhile). A new pool fills in the background: its first asker makes its own."""
        pool = self._pool
        if pool is not None and pool.failed_at is None:
            return pool
        if pool is not None and pool.failed_at is not None:
            if time.monotonic() - pool.failed_at < _POOL_RETRY_SECONDS:
                return None
            self._close_pool()
        pool = self._pool = ScopePool(self._blobs_dir)
        self._pool_finalizer = weakref.finalize(self, ScopePool.close, pool)  # a store dropped unclosed
        return pool

    def _close_pool(self) -> None:
        """Remove this writer's pool (its entries hold no data); a later new execution starts another."""
        self._shard_packs_asked = False
        finalizer, self._pool_finalizer, self._pool = self._pool_finalizer, None, None
        if finalizer is not None:
            finalizer()

    def _make_dir(self, directory: str) -> bool:
        """Make a named scope's directory or a shard; ``False`` when it was there already."""
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            return False
        except FileNotFoundError:  # its parent (``blobs``, ``packs``) was removed, or is not made yet
            os.makedirs(directory, 0o700, exist_ok=True)
            if self.fsync:
                self._dirty_dirs.add(str(self.root))
        if self.fsync:
            self._dirty_dirs.add(os.path.dirname(directory))
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
            self._pool, self._pool_finalizer, self._shard_packs_asked = None, None, False

    def _drop_pack(self, home: str, pack: _Pack | None = None) -> None:
        """Close this writer's pack in ``home`` (only if it is still ``pack``, when given)."""
        if pack is not None and self._packs.get(home) is not pack:
            return
        dropped = self._packs.pop(home, None)
        if dropped is not None:
            self._release(dropped)

    def _done_with(self, pack: _Pack) -> None:
        """A write to ``pack`` ended (under the lock): the last one closes a pack dropped meanwhile."""
        pack.users -= 1
        if pack.released and pack.users == 0:
            os.close(pack.fd)

    def _release(self, pack: _Pack) -> None:
        pack.released = True
        if pack.users == 0:  # else the last write under way closes it (``_done_with``)
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
        """Sync these files, then these directories (the deepest first, the blobs directory last): this
        store's own writes only, never the rest of the file system."""
        _sync_paths(sorted(paths), sorted(dirs, key=len, reverse=True))  # one gone was erased since

    def _scope(self, scope: str, *, writing: bool = False) -> _Scope:
        """What this writer knows of ``scope``, indexed from disk when it is new to it, except with
        ``writing`` (a named scope about to be written): its directory is made at once (one ``rename`` of
        a ready directory, or one ``mkdir``, tells a new execution, which has nothing to index, from one
        to read from disk). A shared scope is never indexed for writing (``put``, ``_written``)."""
        known = self._scopes.get(scope)
        if known is None:
            known = self._scopes[scope] = _Scope()
            bookmark = self._bookmarks.pop(scope, None)
            if bookmark is not None:
                known.resume(bookmark)
            if not writing:
                known.refresh(self._blobs_dir, self._packs_dir, scope)
            elif not self._new_scope_dir(f"{self._blobs_dir}/{scope}"):
                known.refresh(self._blobs_dir, self._packs_dir, scope, shared=False)
            if len(self._scopes) > _KNOWN_SCOPES:
                # the least recently used: indexed again from disk if needed, from its bookmark
                dropped, old = self._scopes.popitem(last=False)
                self._bookmarks[dropped] = old.bookmark()
                if len(self._bookmarks) > _BOOKMARKS:
                    self._bookmarks.popitem(last=False)
        else:
            self._scopes.move_to_end(scope)
        return known

    # -- reading -------------------------------------------------------------------------------------

    def _read(self, ref: str) -> bytes | None:
        """The sealed blob at ``ref``: from where this writer last saw it (or wrote it), else (erased,
        moved, never seen) from what the disk holds now."""
        if REF.match(ref) is None:
            return None
        scope = ref[:32]
        with self._lock:
            entry = self._written.get(ref) if scope not in self._scopes else None
            if entry is None:
                entry = self._scope(scope).entries.get(ref)
        if entry is not None:
            blob = _record(entry, ref)
            if blob is not None:
                return blob
        with self._lock:
            if self._written.get(ref) == entry:
                self._written.pop(ref, None)
            known = self._scope(scope)
            if known.entries.get(ref) == entry:
                known.entries.pop(ref, None)
            known.refresh(self._blobs_dir, self._packs_dir, scope)
            entry = known.entries.get(ref)
        return None if entry is None else _record(entry, ref)

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        opened = self.unsealed(ref, tenant=tenant, execution_id=execution_id)
        return None if opened is None else opened.body

    def unsealed(self, ref: str, *, tenant: str | None, execution_id: str) -> Unsealed | None:
        if not opens(ref, tenant, execution_id):
            return None
        blob = self._read(ref)
        return None if blob is None else unseal_audience(blob, tenant, execution_id)

    def exists(self, ref: str) -> bool:
        return self._read(ref) is not None

    def sealed_blob(self, ref: str) -> bytes | None:
        """The sealed bytes stored at ``ref`` (audit and fault-injection use; not unsealed)."""
        return self._read(ref)

    def write_sealed_blob(self, ref: str, blob: bytes) -> None:
        """Append raw sealed bytes as the newest record for ``ref`` (tests simulating disk faults)."""
        if REF.match(ref) is None:
            raise ValueError("not a reasoning ref")
        scope = ref[:32]
        with self._lock:
            known = self._scope(scope, writing=True)
        frame, blob_len = _frame(ref.encode("ascii"), (blob,))
        self._append(known, f"{self._blobs_dir}/{scope}", ref, (frame, blob), blob_len, named=True)

    # -- removing ------------------------------------------------------------------------------------

    def delete(self, ref: str) -> None:
        """Remove one blob: every record of it is erased in place (rare; erasure is by scope)."""
        if REF.match(ref) is None:
            return
        scope = ref[:32]
        with self._lock:
            self._scopes.pop(scope, None)
            self._bookmarks.pop(scope, None)
            self._written.pop(ref, None)
            _erase_records(f"{self._blobs_dir}/{scope}", ref.__eq__)
            _erase_records(self._shard_dir(scope), ref.__eq__)

    def erase_execution(self, tenant: str | None, execution_id: str) -> int:
        """Remove the named scope's directory (its packs and digest key) and erase the scope's records
        in its shard in place; returns how many blobs were there."""
        scope = scope_of(tenant, execution_id)
        directory = f"{self._blobs_dir}/{scope}"
        with self._lock:
            self._drop_pack(directory)
            self._scopes.pop(scope, None)
            self._bookmarks.pop(scope, None)
            for ref in [ref for ref in self._written if ref.startswith(scope + "/")]:
                del self._written[ref]
            known = _Scope()
            known.refresh(self._blobs_dir, self._packs_dir, scope, shared=False)
            shutil.rmtree(directory, ignore_errors=True)
            shared = _erase_records(self._shard_dir(scope), lambda ref: ref.startswith(scope + "/"))
        return len(known.entries.keys() | shared)

    # -- checking ------------------------------------------------------------------------------------

    def pack_gaps(self) -> tuple[PackGap, ...]:
        """Every gap in the packs (``verify --store``): bytes that are no whole record, every checksum read.
        A gap is a write that failed (its capture failed closed: no record names it), one under way
        now, or a torn tail left by a crash; a record a journal names that falls in one reads as missing."""
        gaps: list[PackGap] = []
        for top in (self._blobs_dir, self._packs_dir):
            try:
                homes = sorted(name for name in os.listdir(top) if not name.startswith("."))
            except FileNotFoundError:
                continue
            for home in homes:
                try:
                    names = sorted(name for name in os.listdir(f"{top}/{home}") if name.endswith(".pack"))
                except (FileNotFoundError, NotADirectoryError):
                    continue
                for name in names:
                    path = f"{top}/{home}/{name}"
                    try:
                        fd = os.open(path, os.O_RDONLY)
                    except FileNotFoundError:
                        continue
                    found: list[tuple[int, int]] = []
                    try:
                        for _ in _records(fd, 0, os.fstat(fd).st_size, gaps=found, check=True):
                            pass
                    finally:
                        os.close(fd)
                    relative = os.path.relpath(path, self.root)
                    gaps += (PackGap(relative, start, end - start) for start, end in found)
        return tuple(gaps)

    # -- digest keys ---------------------------------------------------------------------------------

    def digest_key(self, tenant: str | None, execution_id: str, *, create: bool = False) -> bytes | None:
        """The execution's digest key; with ``create``, made when it has none. A new key is written to the
        OS here and synced with the blobs (``sync_pending``: by the journal's group commit under ``batch``,
        before the first record whose digest it keys); a key a crash left short is made again (no record
        synced since names a digest under it)."""
        directory = self._blobs / scope_of(tenant, execution_id)
        path = directory / DIGEST_KEY_NAME
        key = _read_key(path)
        if key is not None or not create:
            return key
        try:
            os.mkdir(directory, 0o700)
            made = True
        except FileExistsError:
            made = False
        tmp = directory / f".tmp-{uuid.uuid4().hex}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, os.urandom(DIGEST_KEY_BYTES))
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # create-if-absent: a concurrent writer's key wins, and both use it
        except FileExistsError:
            if _read_key(path) is None:
                os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        if self.fsync:
            with self._lock:
                self._dirty.add(str(path))
                self._dirty_dirs.add(str(directory))
                if made:
                    self._dirty_dirs.add(self._blobs_dir)
            _durability.pending(self)
        return _read_key(path)

    def close(self) -> None:
        """Sync what is pending (``fsync``), close this writer's packs and remove its ready scope
        directories (a later ``put`` reopens and starts another pool)."""
        with self._lock:
            for home in list(self._packs):
                self._drop_pack(home)
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


def _read_key(path: Path) -> bytes | None:
    """A digest key file's key; ``None`` when there is none, or it is not a whole key."""
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        return None
    return key if len(key) == DIGEST_KEY_BYTES else None
