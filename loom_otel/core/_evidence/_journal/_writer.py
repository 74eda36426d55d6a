"""The local audit journal: append-only JSON lines, one hash chain per writer process (``origin``).

Layout: ``<directory>/<origin>/<segment:08d>.jsonl``; a segment is closed (synced) and the next one
started after ``segment_records`` records or ``segment_bytes`` bytes. Each line is one record: its
``hash`` first, then the canonical JSON (sorted keys, no spaces) of the rest::

    {"hash": SHA-256(prev || canonical(record without "hash")), "attributes": {...}, "origin": ...,
     "prev": <hash of n-1>, "seq": n, "time": <unix ns>, "type": "capture", "v": 1}

Readers parse the line as JSON (``_reader``: ``read_lines``, ``iter_records``); ``record_body`` gives the
canonical bytes the hash covers.

The record's ``attributes`` are exactly the span event's attributes minus the chain fields, so a
record can be rebuilt from an exported event and its hash checked (``_records``).

Durability (``LOOM_OTEL_JOURNAL_DURABILITY``): ``always`` syncs each record before ``append`` returns;
``batch`` is a background group commit: ``append`` returns once its record is written to the OS, and
one ``fdatasync`` within about ``BATCH_WINDOW`` covers every record appended meanwhile (and a rotation's
closed segment: no calling thread waits on a device flush); ``os`` leaves it to the OS (``flush`` and
``close`` still sync). In every mode the registered stores' blobs are synced before the records that
name them (``_durability``).

Writing: a record's place in the chain (seq, prev, hash) is taken under the lock, where no system call
is made; its line is written outside it, in order: the first appender to find no write under way writes
every line queued meanwhile in one ``write`` (``_commit``), and ``append`` returns once its own line is
written. A write that fails takes the chain back to its last written line, and the lines reserved after
it fail too (their captures fail closed): the chain on disk never has a hole.

Crash safety: a crash (or a full disk) can leave a torn last line; the writer that hit a short write
truncates it away and moves to a new segment, and a dead
process's torn line stays where it is, to be reported by ``verify`` and by the forwarder (never
silently dropped, never appended to: the next process starts its own origin). While a writer is
alive it holds an exclusive ``flock`` on its origin directory, which is how readers tell a live chain
from a dead one. Thread-safe; asyncio code may call ``append`` directly (it never awaits). Fork-safe:
a child process starts its own origin, with new locks and threads (``_fork``).

Beside the chain, the writer keeps its origin's Merkle tree as a compact range (``_merkle``: leaf =
the record's hash); each checkpoint carries its root and a signed ``tlog-checkpoint`` note (``_note``).
An origin is never resumed (a new process, or a forked child, starts its own), so neither is its tree.

Checkpoints (``_checkpoint``) are appended every ``checkpoint_every`` records, every
``checkpoint_interval`` seconds while records keep coming, and at ``close()`` (and so at exit).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, Literal, NamedTuple

from loom_otel.core import environment_variables as env
from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._evidence import _durability
from loom_otel.core._evidence._attributes import AttributeValue
from loom_otel.core._evidence._canonical import GENESIS, canonical_json, chain_hash
from loom_otel.core._evidence._io_error import failure_detail
from loom_otel.core._evidence._journal._checkpoint import Signer, checkpoint_attributes
from loom_otel.core._evidence._journal._merkle import CompactRange, leaf_hash
from loom_otel.core._evidence._journal._note import tree_attributes
from loom_otel.core._evidence._journal._records import RECORD_VERSION
from loom_otel.core._evidence._syncer import sync_here
from loom_otel.core._runtime._fork import renew_after_fork, renew_module_after_fork
from loom_otel.core._runtime._warnings import warn

__all__ = [
    "BestEffortJournal",
    "Durability",
    "Journal",
    "JournalEntry",
    "best_effort",
    "open_journal",
    "record_body",
]

Durability = Literal["always", "batch", "os"]
DURABILITIES: Final = ("always", "batch", "os")

SEGMENT_RECORDS: Final = 100_000
SEGMENT_BYTES: Final = 64 << 20
CHECKPOINT_EVERY: Final = 1000
CHECKPOINT_INTERVAL: Final = 30.0

_logger = logging.getLogger(__name__)
_sync = getattr(os, "fdatasync", os.fsync)
_sync_directory = os.fsync


class _FromEnvironment:
    """Sentinel: read ``LOOM_OTEL_CHECKPOINT_KEY`` at construction."""


FROM_ENVIRONMENT: Final = _FromEnvironment()


_write = os.write
"""How a batch of lines reaches the segment (a module seam: tests fail a write there)."""


class _Pending:
    """A record reserved in the chain whose line is not written yet (``Journal._commit``)."""

    __slots__ = ("entry", "failure", "leaf", "line", "written")

    def __init__(self, entry: JournalEntry, line: bytes, leaf: bytes) -> None:
        self.entry, self.line, self.leaf = entry, line, leaf
        self.written = False
        self.failure: OSError | None = None


class _Written(NamedTuple):
    """The chain as far as its lines are written: the last one's seq and hash, the tree over them, and
    how many lines and bytes of the open segment they fill."""

    seq: int
    head: str
    tree: CompactRange
    in_segment: int
    size: int


class JournalEntry(NamedTuple):
    """Where a record landed in the chain: the fields a span event carries as ``loom.audit.*`` (a tuple
    of plain values: one per capture)."""

    origin: str
    seq: int
    prev: str
    hash: str
    time: int


def record_body(record: Mapping[str, object]) -> bytes:
    """The canonical bytes a record's hash covers (the record without its ``hash``)."""
    return canonical_json({k: v for k, v in record.items() if k != "hash"})


def _chain_record(
    origin: str, seq: int, prev: str, now: int, *, type_: str, attributes: Mapping[str, AttributeValue]
) -> tuple[JournalEntry, bytes]:
    """Record ``seq`` of a chain: where it lands, and its journal line (hash first, then the body)."""
    record: dict[str, object] = {
        "v": RECORD_VERSION,
        "origin": origin,
        "seq": seq,
        "prev": prev,
        "time": now,
        "type": type_,
        "attributes": attributes,  # tuples encode as arrays: the canonical bytes are the same
    }
    body = canonical_json(record)
    digest = chain_hash(prev, body)
    return JournalEntry(origin, seq, prev, digest, now), b'{"hash":"' + digest.encode() + b'",' + body[1:] + b"\n"


def _new_origin() -> str:
    return f"{os.uname().nodename[:24]}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


_warned_unsigned = False


def _load_signer(setting: str | None) -> Signer | None:
    """The checkpoint signer, or ``None`` with one ``LoomOtelWarning`` per process."""
    global _warned_unsigned
    if setting:
        try:
            return Signer.from_file(Path(setting).expanduser())
        except (OSError, ValueError, TypeError) as exc:
            why = f"cannot be loaded ({failure_detail(exc, Path(setting).expanduser())})"
    else:
        why = "is not set"
    if not _warned_unsigned:
        _warned_unsigned = True
        warn(
            f"{env.LOOM_OTEL_CHECKPOINT_KEY} {why}: audit journal checkpoints are unsigned "
            "(create a key with `loom-otel keygen PATH`)"
        )
    return None


_VERSION_TAIL: Final = b',"v":%d}' % RECORD_VERSION


@functools.cache
def _type_json(type_: str) -> bytes:
    """``canonical_json(type_)``, kept per record type (a handful of them)."""
    return canonical_json(type_)


BATCH_WINDOW: Final = 0.02
"""``batch`` durability: how long the group commit lets appends gather before one fsync covers them.
Each sync slows the appends made while it runs (a new conversation per call at ~2,000 calls a second
paid ~45 us per call more at 5 ms than at 20 ms, ~10 us more than at 50 ms; issue 15)."""


class Journal:
    """One writer's chain in ``directory``. Thread-safe; each append is written to the OS before it
    returns (it survives a crash of the process), ``OSError`` when it cannot be (callers fail closed).

    When it reaches the disk: ``always``, before the append returns; ``batch``, within about
    ``BATCH_WINDOW`` (a background group commit: one fsync covers every record appended meanwhile, and
    a power loss can cost at most that window); ``os``, when the OS writes it back.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        durability: Durability = "batch",
        checkpoint_key: str | os.PathLike[str] | _FromEnvironment | None = FROM_ENVIRONMENT,
        checkpoint_every: int = CHECKPOINT_EVERY,
        checkpoint_interval: float = CHECKPOINT_INTERVAL,
        segment_records: int = SEGMENT_RECORDS,
        segment_bytes: int = SEGMENT_BYTES,
    ) -> None:
        if durability not in DURABILITIES:
            raise ValueError(f"durability must be one of {', '.join(DURABILITIES)}, got {durability!r}")
        self.directory = Path(directory).expanduser().absolute()
        self.durability: Durability = durability
        if isinstance(checkpoint_key, _FromEnvironment):
            checkpoint_key = os.environ.get(env.LOOM_OTEL_CHECKPOINT_KEY) or None
        self._key_setting = None if checkpoint_key is None else os.fspath(checkpoint_key)
        self._signer: Signer | None = None
        self._signer_loaded = False
        self._every = max(1, checkpoint_every)
        self._interval = checkpoint_interval
        self._segment_records = max(1, segment_records)
        self._segment_bytes = max(1, segment_bytes)
        self._start_chain()
        _live.add(self)
        _durability.register_journal(self)
        renew_after_fork(self, Journal._after_fork_in_child)

    def _start_chain(self) -> None:
        self._lock = threading.Lock()
        self._turn = threading.Condition(self._lock)
        """Signalled when a batch of lines has been written (or failed), and the writer's turn is free."""
        self._queue: list[_Pending] = []
        """Lines reserved in the chain, not written yet (``_commit``: the next writer takes them all)."""
        self._writing = False
        """A thread is writing a batch of lines (outside the lock)."""
        self._fd_users = 0
        """Syncs of the open segment's descriptor under way outside the lock (it is not closed meanwhile)."""
        self._synced_cond = threading.Condition(threading.Lock())
        self._syncing = False
        self._synced = 0
        self.origin = _new_origin()
        self._origin_json = b',"origin":' + canonical_json(self.origin) + b',"prev":"'
        self._pid = os.getpid()
        self._seq = 0
        self._head = GENESIS
        self._tree = CompactRange()
        """The origin's Merkle tree (``_merkle``), O(log n) hashes: its root goes on each checkpoint."""
        self._written = _Written(0, GENESIS, CompactRange(), 0, 0)
        """The chain as far as it is written: where a failed write takes it back to (no hole, ever)."""
        self._segment = 0
        self._in_segment = 0
        self._segment_size = 0
        self._fd = -1
        self._dir_fd = -1
        self._retired: list[int] = []
        """``batch``: the descriptors of segments closed by a rotation, left for the group commit to sync
        (after the blobs their records name) and close: a rotation never flushes on the calling thread."""
        self._entry_unsynced = False
        """``batch``: a new segment's directory entry is not synced yet (the group commit does it)."""
        self._checkpoint_seq = 0
        self._checkpoint_at = time.monotonic()
        self._timer: threading.Thread | None = None
        self._timer_stop = threading.Event()
        self._dirty = threading.Event()
        weakref.finalize(self, self._dirty.set)  # a journal collected wakes its group-commit thread to end
        self._flusher: threading.Thread | None = None
        self._flusher_stop = threading.Event()

    # -- writing -------------------------------------------------------------------------------

    def append(self, type_: str, attributes: Mapping[str, AttributeValue]) -> JournalEntry:
        """Append one record; raises ``OSError`` when it cannot be written (callers fail closed)."""
        return self.append_all(type_, (attributes,))[0]

    def append_all(self, type_: str, records: Sequence[Mapping[str, AttributeValue]]) -> list[JournalEntry]:
        """Append ``records`` together, in order, in one turn (a page read of many parts): one lock hold
        and, usually, one write. ``OSError`` when any could not be written (callers fail closed; those
        before it may be written)."""
        if not records:
            return []
        encoded = [canonical_json(attributes) for attributes in records]  # outside the lock: the bulk of it
        with self._lock:
            self._make_room_locked()  # once: the segment may run past its size by this batch
            now = time.time_ns()
            reserved = [self._reserve_locked(type_, each, now) for each in encoded]
            if self._seq - self._checkpoint_seq >= self._every:
                self._checkpoint_locked()
            target = self._seq
            if self._timer is None and self._interval > 0:
                self._start_timer()
        self._commit(reserved[-1])
        failed = next((p.failure for p in reserved if p.failure is not None), None)
        if failed is not None:
            raise failed
        self._schedule_sync(target)
        return [p.entry for p in reserved]

    def checkpoint(self) -> JournalEntry | None:
        """Append a checkpoint now if any record is not covered by one; ``None`` otherwise."""
        with self._lock:
            if self._seq == self._checkpoint_seq:
                return None
            self._make_room_locked()
            pending = self._checkpoint_locked()
            target = self._seq
        self._commit(pending)
        self._await_sync(target)
        return pending.entry

    def _make_room_locked(self) -> None:
        """Open a segment, or the next one when this one is full. Lines already reserved belong to the
        open segment, so a rotation first waits for them to be written (one in ``segment_records``)."""
        if not self._needs_segment():
            return
        while self._writing or self._queue:
            self._turn.wait()
        if self._needs_segment():
            self._open_segment()

    def _needs_segment(self) -> bool:
        """No segment is open, or the open one is full."""
        return self._fd < 0 or self._in_segment >= self._segment_records or self._segment_size >= self._segment_bytes

    def _reserve_locked(self, type_: str, attributes: bytes, now: int) -> _Pending:
        """Chain a record whose ``attributes`` are already canonical JSON (``canonical_json``) and queue its
        line: ``_commit`` writes it. Its place in the chain is taken here, under the lock (no system call
        is made under it: a thread that gave the interpreter up while holding it would hold up every
        capture behind it, issue 49)."""
        seq = self._seq + 1
        # canonical_json(record), its keys in sorted order: attributes, origin, prev, seq, time, type, v
        body = b"".join(
            (
                b'{"attributes":',
                attributes,
                self._origin_json,
                self._head.encode(),
                b'","seq":%d,"time":%d,"type":' % (seq, now),
                _type_json(type_),
                _VERSION_TAIL,
            )
        )
        digest = chain_hash(self._head, body)
        line = b'{"hash":"' + digest.encode() + b'",' + body[1:] + b"\n"
        leaf = leaf_hash(bytes.fromhex(digest))
        pending = _Pending(JournalEntry(self.origin, seq, self._head, digest, now), line, leaf)
        self._seq, self._head = seq, digest
        self._tree.append(leaf)
        self._in_segment += 1
        self._segment_size += len(line)
        self._queue.append(pending)
        return pending

    def _commit(self, pending: _Pending) -> None:
        """Return once ``pending``'s line is written; ``OSError`` when it could not be. The first thread
        to find no write under way writes every line queued (its own among them) in one ``write``,
        outside the lock; the others wait for it, or take the next turn."""
        with self._lock:
            while pending.failure is None and not pending.written:
                if not self._writing:
                    self._writing = True
                    batch, self._queue = self._queue, []
                    break
                self._turn.wait()
            else:
                if pending.failure is not None:
                    raise pending.failure
                return
        self._write_batch(batch)
        if pending.failure is not None:
            raise pending.failure

    def _write_batch(self, batch: list[_Pending]) -> None:
        """Write ``batch`` (this thread's turn), then mark each line written, or the chain taken back to
        the last line written when the write failed: every line reserved after it fails too (their
        captures fail closed), and the chain on disk stays whole."""
        failure: OSError | None = None
        try:
            if self.durability == "always":
                _durability.sync_dependents()  # the blobs the records name are on the disk before they exist
            data = b"".join(p.line for p in batch)
            written = _write(self._fd, data)
            if written != len(data):
                raise OSError(f"short write to the audit journal ({written} of {len(data)} bytes)")
            if self.durability == "always":
                _sync(self._fd)
        except OSError as exc:
            failure = exc
        with self._lock:
            try:
                if failure is None:
                    state = self._written
                    for each in batch:
                        each.written = True
                        state.tree.append(each.leaf)
                    last = batch[-1].entry
                    self._written = _Written(
                        last.seq, last.hash, state.tree, state.in_segment + len(batch), state.size + len(data)
                    )
                else:
                    self._take_back_locked(batch, failure)
            finally:
                self._writing = False
                self._turn.notify_all()

    def _take_back_locked(self, batch: list[_Pending], failure: OSError) -> None:
        """A write failed: cut what it left of a line, and take the chain back to its last written line."""
        lost = [*batch, *self._queue]
        self._queue = []
        state = self._written
        try:
            os.ftruncate(self._fd, state.size)  # never leave a torn line in a live segment
        except OSError:
            _logger.warning("audit journal %s: could not cut a torn line; starting a new segment", self.origin)
        if self.durability == "batch":
            self._retired.append(self._fd)  # the group commit syncs what it holds
            self._fd = -1
        else:
            self._close_fd_locked()  # the next record starts a new segment
        self._seq, self._head = state.seq, state.head
        self._tree = CompactRange(state.tree.size, state.tree.peaks)
        self._in_segment, self._segment_size = state.in_segment, state.size
        self._checkpoint_seq = min(self._checkpoint_seq, state.seq)
        later = OSError(failure.errno, f"an earlier audit record could not be written ({failure})")
        for each in lost:
            each.failure = failure if each in batch else later

    def _checkpoint_locked(self) -> _Pending:
        if not self._signer_loaded:
            self._signer, self._signer_loaded = _load_signer(self._key_setting), True
        now = time.time_ns()
        attributes: dict[str, str | int] = checkpoint_attributes(self.origin, self._seq, self._head, now, self._signer)
        signing = None if self._signer is None else self._signer.key
        attributes.update(tree_attributes(self.origin, self._tree.size, self._tree.root(), signing))
        pending = self._reserve_locked(attr.RECORD_CHECKPOINT, canonical_json(attributes), now)
        self._checkpoint_seq, self._checkpoint_at = self._seq, time.monotonic()
        return pending

    def _open_segment(self) -> None:
        if self._fd >= 0:
            self._close_segment(retire=self.durability == "batch")
        chain_dir = self.directory / self.origin
        if self._dir_fd < 0:
            chain_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            dir_fd = os.open(chain_dir, os.O_RDONLY | os.O_DIRECTORY)
            try:
                fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(dir_fd)
                raise
            self._dir_fd = dir_fd
            if not self._signer_loaded:
                self._signer, self._signer_loaded = _load_signer(self._key_setting), True
        self._segment += 1
        self._fd = os.open(self._segment_path(self._segment), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        self._in_segment = 0
        self._segment_size = 0
        self._written = self._written._replace(in_segment=0, size=0)
        if self.durability == "always":
            _sync_directory(self._dir_fd)
        elif self.durability == "batch":
            self._entry_unsynced = True

    def _segment_path(self, segment: int) -> Path:
        return self.directory / self.origin / f"{segment:08d}.jsonl"

    def _close_segment(self, *, retire: bool = False) -> None:
        """Close the open segment: synced first (``always`` and ``batch``), or, with ``retire`` (a
        rotation under ``batch``), handed to the group commit, which syncs it after the blobs its
        records name (``_await_sync``)."""
        if retire:
            self._retired.append(self._fd)
            self._fd = -1
            return
        try:
            if self.durability != "os":
                _durability.sync_dependents()  # the blobs its records name reach the disk first
                self._sync_retired_locked()
                _sync(self._fd)
                with self._synced_cond:
                    self._synced = max(self._synced, self._seq)
                    self._synced_cond.notify_all()
        finally:
            self._close_fd_locked()

    def _close_fd_locked(self) -> None:
        """Close the open segment's descriptor once no sync uses it."""
        while self._fd_users:
            self._turn.wait()
        os.close(self._fd)
        self._fd = -1

    def _sync_retired_locked(self) -> None:
        """Sync and close the segments a rotation retired, and sync the directory's new entries."""
        _sync_and_close(self._retired)
        if self._entry_unsynced and self._dir_fd >= 0:
            _sync_directory(self._dir_fd)
            self._entry_unsynced = False

    def _schedule_sync(self, target: int) -> None:
        """``batch``: hand the sync to the group-commit thread; ``always`` synced already; ``os``: none."""
        if self.durability != "batch":
            return
        if not self._dirty.is_set():  # one wake-up per group, not per append
            self._dirty.set()
        if self._flusher is None:
            with self._lock:
                if self._flusher is None:
                    self._flusher_stop = threading.Event()
                    self._flusher = threading.Thread(
                        target=_group_commit,
                        args=(weakref.ref(self), self._flusher_stop, self._dirty),
                        name="loom-otel-journal-commit",
                        daemon=True,
                    )
                    self._flusher.start()

    def flush(self) -> None:
        """Sync every record appended so far, and first the blobs they name (any durability)."""
        with self._lock:
            target = self._seq
        self._await_sync(target, force=True)

    def _await_sync(self, target: int, *, force: bool = False) -> None:
        """``batch``: return once record ``target`` is synced, sharing one sync among concurrent callers
        (checkpoints and the group-commit thread wait here; appends do not). The registered stores'
        pending blobs are synced first (``_durability``): a record is never durable before its blobs."""
        if self.durability != "batch" and not force:
            return
        cond = self._synced_cond
        with cond:
            while self._synced < target:
                if not self._syncing:
                    self._syncing = True
                    break
                cond.wait()
            else:
                return
        upto, synced = 0, False
        try:
            with self._lock:
                upto, segment, writing = self._written.seq, self._segment, self._fd >= 0
                retired, self._retired = self._retired, []
                entry, self._entry_unsynced = self._entry_unsynced, False
            try:
                _durability.sync_dependents()  # every blob named by records up to ``upto`` was written before
                _sync_and_close(retired)
                if entry:
                    self._sync_directory()
                entry = False
            except BaseException:
                with self._lock:  # the next group commit tries again
                    self._retired[:0] = retired
                    self._entry_unsynced = self._entry_unsynced or entry
                raise
            if writing:
                self._sync_segment(segment)
            synced = True
        finally:
            with cond:
                self._syncing = False
                if synced:
                    self._synced = max(self._synced, upto)
                cond.notify_all()

    def _sync_directory(self) -> None:
        """Sync the origin directory's entries, through a descriptor of its own (a duplicate of the one
        that holds the origin's ``flock`` would keep the lock past ``close``)."""
        sync_here(self.directory / self.origin, _sync_directory)

    def _sync_segment(self, segment: int) -> None:
        """Sync segment number ``segment``: by its descriptor while it is open (counted in use, so nothing
        closes it meanwhile), else by its path (closed since, unsynced under ``os``). No system call is
        made under the lock: the appenders would wait for it."""
        with self._lock:
            current = segment == self._segment and self._fd >= 0
            if current:
                fd = self._fd
                self._fd_users += 1
            path = self._segment_path(segment)
        if current:
            try:
                _sync(fd)
            finally:
                with self._lock:
                    self._fd_users -= 1
                    self._turn.notify_all()
            return
        sync_here(path, _sync)

    # -- time-based checkpoints ----------------------------------------------------------------

    def _start_timer(self) -> None:
        self._timer_stop = threading.Event()
        self._timer = threading.Thread(
            target=_checkpoint_timer,
            args=(weakref.ref(self), self._timer_stop, self._interval),
            name="loom-otel-journal-checkpoint",
            daemon=True,
        )
        self._timer.start()

    def _timed_checkpoint(self) -> None:
        with self._lock:
            due = time.monotonic() - self._checkpoint_at >= self._interval
            if self._fd < 0 or self._seq == self._checkpoint_seq or not due:
                return
            self._make_room_locked()
            pending = self._checkpoint_locked()
            target = self._seq
        self._commit(pending)
        self._await_sync(target)

    # -- state ---------------------------------------------------------------------------------

    @property
    def head(self) -> tuple[int, str]:
        with self._lock:
            return self._seq, self._head

    @property
    def live(self) -> bool:
        """Whether this journal currently holds its origin open (it has written and is not closed)."""
        return self._dir_fd >= 0

    def close(self) -> None:
        """Checkpoint what is not covered yet, sync, and release the segment (a later append reopens).
        Closed already, with nothing written since: returns at once (``reset_runtime`` closes every
        journal of the process, and a test suite opens one a test)."""
        pending: _Pending | None = None
        with self._lock:
            if self._idle_locked():
                return
            self._timer_stop.set()
            self._timer = None
            self._flusher_stop.set()
            self._dirty.set()  # wake it: it ends
            self._flusher = None
            while self._writing or self._queue:
                self._turn.wait()
            if self._seq != self._checkpoint_seq:  # in a new segment when a failed write ended the last one
                self._make_room_locked()
                pending = self._checkpoint_locked()
        try:
            if pending is not None:
                self._commit(pending)
        finally:
            with self._lock:
                while self._writing or self._queue:
                    self._turn.wait()
                try:
                    _durability.sync_dependents()
                finally:
                    if self._fd >= 0:
                        self._close_segment()
                    elif self.durability != "os":
                        self._sync_retired_locked()
                if self._dir_fd >= 0:
                    os.close(self._dir_fd)
                    self._dir_fd = -1

    def _idle_locked(self) -> bool:
        """Nothing open, owed or running: never written, or closed with nothing written since."""
        return (
            self._fd < 0
            and self._dir_fd < 0
            and not (self._retired or self._writing or self._queue or self._entry_unsynced)
            and self._seq == self._checkpoint_seq
            and self._timer is None
            and self._flusher is None
        )

    def _after_fork_in_child(self) -> None:
        for fd in (self._fd, self._dir_fd, *self._retired):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._start_chain()


def _sync_and_close(fds: list[int]) -> None:
    """Sync and close each descriptor of ``fds``, in order, taking it off the list once it is done (what
    is left when a sync fails is tried again)."""
    while fds:
        _sync(fds[0])
        os.close(fds.pop(0))


def _group_commit(ref: weakref.ref[Journal], stop: threading.Event, dirty: threading.Event) -> None:
    """Sync a journal's appends in groups: wait for one, let a window's worth gather, sync them all.
    An idle journal's thread sleeps until an append, ``close`` or the journal's collection wakes it (it
    never polls: a process with many journals has no threads waking for nothing)."""
    while not stop.is_set():
        dirty.wait()
        if stop.is_set() or ref() is None:
            return
        time.sleep(BATCH_WINDOW)
        dirty.clear()
        journal = ref()
        if journal is None:
            return
        try:
            journal._await_sync(journal.head[0])
        except OSError as exc:
            _logger.warning("audit journal: group commit failed (%s); retrying", type(exc).__name__)
            dirty.set()
        del journal


def _checkpoint_timer(ref: weakref.ref[Journal], stop: threading.Event, interval: float) -> None:
    tick = max(0.01, interval / 4)
    while not stop.wait(tick):
        journal = ref()
        if journal is None:
            return
        try:
            journal._timed_checkpoint()
        except OSError as exc:
            _logger.warning("audit journal: timed checkpoint failed (%s)", type(exc).__name__)
        del journal


_live: weakref.WeakSet[Journal] = weakref.WeakSet()
_journals: dict[Path, Journal] = {}
_journals_lock = threading.Lock()
renew_module_after_fork(__name__)


def open_journal(
    directory: str | os.PathLike[str],
    *,
    durability: Durability = "batch",
    checkpoint_key: str | os.PathLike[str] | _FromEnvironment | None = FROM_ENVIRONMENT,
) -> Journal:
    """The process's one journal for ``directory`` (one chain per writer process). ``checkpoint_key``
    (a PEM path, ``None`` = unsigned) defaults to ``LOOM_OTEL_CHECKPOINT_KEY``; it is used when the
    journal is first opened."""
    key = Path(directory).expanduser().absolute()
    with _journals_lock:
        journal = _journals.get(key)
        if journal is None:
            journal = _journals[key] = Journal(key, durability=durability, checkpoint_key=checkpoint_key)
        return journal


def local_origins(directory: str | os.PathLike[str]) -> frozenset[str]:
    """Origins this process writes in ``directory`` (live ``Journal`` objects)."""
    key = Path(directory).expanduser().absolute()
    return frozenset(j.origin for j in list(_live) if j.directory == key)


def live_journals() -> list[Journal]:
    """Every journal of this process that is open (``reset_runtime`` closes them)."""
    return list(_live)


def local_journals(directory: str | os.PathLike[str]) -> list[Journal]:
    key = Path(directory).expanduser().absolute()
    return [j for j in list(_live) if j.directory == key]


class _UnwrittenChain:
    """Where a best-effort journal's records go while its directory cannot be written: a chain of
    its own origin, kept only by the span events that carry its records (nothing is on disk)."""

    def __init__(self) -> None:
        self.restart()
        renew_after_fork(self, _UnwrittenChain.restart)  # a child never continues its parent's chain

    def restart(self) -> None:
        """A new chain (at construction, and in a forked child: a child never continues its parent's)."""
        self._lock = threading.Lock()
        self.origin = _new_origin()
        self._seq = 0
        self._head = GENESIS

    def append(self, type_: str, attributes: Mapping[str, AttributeValue]) -> JournalEntry:
        with self._lock:
            entry, _ = _chain_record(
                self.origin, self._seq + 1, self._head, time.time_ns(), type_=type_, attributes=attributes
            )
            self._seq, self._head = entry.seq, entry.hash
            return entry


class BestEffortJournal:
    """The journal of a configuration that keeps nothing readable (no store; DESIGN "Failure
    policy"): nothing it does raises into the application.

    ``append`` writes to ``journal`` when it can; when it cannot (an unwritable or missing location,
    a full disk) it warns once per directory and chains the record in memory instead, under an origin
    of its own, so the span event still carries a well-formed chain position (``verify`` of the
    collector's copy reports that chain as unanchored: no checkpoint covers it). Every append tries
    the directory again, so journaling resumes when the location becomes writable.
    """

    def __init__(self, journal: Journal, unwritten: _UnwrittenChain) -> None:
        self.journal = journal
        self._unwritten = unwritten

    @property
    def directory(self) -> Path:
        return self.journal.directory

    @property
    def head(self) -> tuple[int, str]:
        return self.journal.head

    def append(self, type_: str, attributes: Mapping[str, AttributeValue]) -> JournalEntry:
        """Append to the journal, else (warning once) to the in-memory chain; never raises."""
        try:
            return self.journal.append(type_, attributes)
        except Exception as exc:
            warn_unwritable(self.journal.directory, exc)
        return self._unwritten.append(type_, attributes)

    def close(self) -> None:
        try:
            self.journal.close()
        except OSError as exc:
            warn_unwritable(self.journal.directory, exc)


def warn_unwritable(directory: Path, problem: BaseException | str) -> None:
    """The one warning (once per directory) that a best-effort journal's records are not kept."""
    why = problem if isinstance(problem, str) else getattr(problem, "strerror", None) or type(problem).__name__
    warn(
        f"audit journal directory {str(directory)!r} cannot be written ({why}): with no reasoning store "
        f"configured, model calls go on and their audit records are not kept locally; set "
        f"{env.LOOM_OTEL_AUDIT_JOURNAL} to a writable directory",
        once=("journal", directory),
    )


_unwritten_chains: weakref.WeakKeyDictionary[Journal, _UnwrittenChain] = weakref.WeakKeyDictionary()


def best_effort(journal: Journal) -> BestEffortJournal:
    """``journal`` for a configuration with nothing readable to keep: its failures never raise."""
    with _journals_lock:
        unwritten = _unwritten_chains.get(journal)
        if unwritten is None:
            unwritten = _unwritten_chains[journal] = _UnwrittenChain()
    return BestEffortJournal(journal, unwritten)


def _close_all() -> None:
    for journal in list(_live):
        try:
            journal.close()
        except OSError as exc:
            _logger.warning("audit journal %s: close at exit failed (%s)", journal.origin, type(exc).__name__)


atexit.register(_close_all)
