"""The capture index: an SQLite file per journal (or collector file) that makes a bounded query cost
independent of the journal's size. It is a cache kept in a directory only its owner can write
(``index_directory``), never beside the journal or at a guessable temporary path, and nothing read from it
decides access: a reader's rule runs on each line read back and on the audience sealed with each blob.

It holds no reasoning and no digest: per capture record only the selection keys (execution, tenant,
step, log order) and where the record's line is (file, offset, length). A query selects rows, then
re-reads and re-parses just those lines, so what it returns always comes from the journal itself; a
line that no longer says what the index says marks the index stale and it is rebuilt.

Freshness: each indexed file's size, mtime and indexed offset are kept. Appended lines and new
segments are indexed incrementally on the next query; a file that shrank, vanished or was rewritten
in place (same size, new mtime, and the last bytes indexed changed) triggers a full rebuild, in the same
file (connections of other workers stay valid); only a damaged file is replaced. The index is a cache:
deleting it is safe.

Listing: per (execution, tenant, principal, owner) a summary row (``audiences``: captures, parts, steps,
first and last time, providers, models) is kept up to date with the records it sums (the executions the
new records name are summed again), so a page of executions reads one row per execution and audience,
not every capture (a search, which may name a capture's trace id, still reads the captures).

Reads: the viewer's ``read`` records of a journal (its reads journal) are kept whole in ``reads`` (reader,
tenant, execution, ref, digest, outcome, log order: names and references, no text), so who read a part
and the reads listing are answered from the index, and a worker started again reads no read record twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sqlite3
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final, TypeVar

from loom_otel.audit._captures import CaptureRecord, parse_collector_line, parse_journal_line
from loom_otel.audit._read_records import ReadRecord, parse_read_line
from loom_otel.core.journal import all_segments
from loom_otel.core.runtime import APP_NAME, private_directory

__all__ = [
    "AudienceRow",
    "CaptureIndex",
    "ExecutionFilter",
    "IndexRow",
    "ListedExecution",
    "StaleIndexError",
    "index_directory",
    "index_path_for",
]

INDEX_VERSION: Final = "5"
_BATCH: Final = 20_000
_SCHEMA: Final = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, size INTEGER NOT NULL,
                   mtime_ns INTEGER NOT NULL, indexed INTEGER NOT NULL, tail TEXT NOT NULL DEFAULT '');
CREATE TABLE records(origin TEXT NOT NULL, seq INTEGER NOT NULL, execution_id TEXT NOT NULL, tenant TEXT,
                     step_id TEXT NOT NULL, time INTEGER NOT NULL, file_id INTEGER NOT NULL,
                     offset INTEGER NOT NULL, length INTEGER NOT NULL, principal TEXT, owner TEXT,
                     parts INTEGER NOT NULL DEFAULT 0, provider TEXT NOT NULL DEFAULT '',
                     model TEXT NOT NULL DEFAULT '', trace_id TEXT, PRIMARY KEY(origin, seq)) WITHOUT ROWID;
CREATE TABLE audiences(execution_id TEXT NOT NULL, tenant TEXT, principal TEXT, owner TEXT, calls INTEGER NOT NULL,
                       parts INTEGER NOT NULL, steps INTEGER NOT NULL, first INTEGER NOT NULL,
                       last INTEGER NOT NULL, providers TEXT, models TEXT);
CREATE INDEX audiences_of ON audiences(execution_id, tenant);
CREATE TABLE reads(origin TEXT NOT NULL, seq INTEGER NOT NULL, time INTEGER NOT NULL, reader TEXT NOT NULL,
                   tenant TEXT, execution_id TEXT NOT NULL, ref TEXT NOT NULL, digest TEXT NOT NULL,
                   outcome TEXT NOT NULL, file_id INTEGER NOT NULL, offset INTEGER NOT NULL,
                   length INTEGER NOT NULL, PRIMARY KEY(origin, seq)) WITHOUT ROWID;
CREATE INDEX reads_of ON reads(execution_id, tenant);
CREATE INDEX reads_by_time ON reads(time, origin, seq);
CREATE TABLE read_tallies(execution_id TEXT NOT NULL, tenant_key TEXT NOT NULL, ref TEXT NOT NULL,
                          reader TEXT NOT NULL, reads INTEGER NOT NULL, first INTEGER NOT NULL,
                          PRIMARY KEY(execution_id, tenant_key, ref, reader)) WITHOUT ROWID;
"""
_DISTINCT: Final = "replace(group_concat(DISTINCT {0} || char(31)), char(31) || ',', char(31))"
"""The distinct values of a column, each ended by the unit separator (DISTINCT takes no separator)."""
_SUMMED: Final = (
    "SELECT execution_id, tenant, principal, owner, count(*), sum(parts), count(DISTINCT step_id), min(time),"
    f" max(time), {_DISTINCT.format('provider')}, {_DISTINCT.format('model')} FROM records"
)
"""The summary rows of the captures a WHERE clause keeps (``audiences``), grouped by execution and audience."""
_GROUPS: Final = " GROUP BY execution_id, tenant, principal, owner"
_WAL_BYTES: Final = 32 << 20
"""Write-ahead log bytes past which a writer checkpoints it and empties it (``_checkpointed``)."""
_BUSY: Final = 300.0
"""Seconds a process waits for another one's indexing (a first build of a large journal) before failing."""
_RESUM_ALL: Final = 2_000
"""More executions touched than this in one refresh: the summary is made again whole (one pass)."""
_STEP_INDEX: Final = "CREATE INDEX IF NOT EXISTS by_step ON records(execution_id, tenant, step_id, time, origin, seq)"


def _audience(record: CaptureRecord) -> tuple[str | None, str | None, int, str, str, str | None]:
    """A row's audience, part count and what a listing shows and searches (provider, model, trace)."""
    model = record.response_model or record.request_model
    return (record.principal, record.owner, len(record.kinds), record.provider, model, record.trace_id)


_READ_FILTERS: Final = ("reader", "execution_id", "tenant", "outcome")
_READ_COLUMNS: Final = "time, reader, tenant, execution_id, ref, digest, outcome, origin, seq"


_TALLY: Final = (
    "INSERT INTO read_tallies VALUES(?, ?, ?, ?, 1, ?) ON CONFLICT(execution_id, tenant_key, ref, reader)"
    " DO UPDATE SET reads = reads + 1, first = min(first, excluded.first)"
)
"""One more read of a part by a reader (``read_tallies``: who read what, kept as the reads are indexed, so
a page's who-read reads one row per part and reader, however many times it was read)."""


def _tenant_key(tenant: str | None) -> str:
    """``tenant`` as a key column (``None``, no tenant, is not any named tenant)."""
    return "" if tenant is None else f"={tenant}"


def _read_columns(read: ReadRecord) -> tuple[object, ...]:
    """A read record's row in ``reads``, before where its line is (file, offset, length)."""
    return (read.origin, read.seq, read.time, read.reader, read.tenant, read.execution_id, read.ref, read.digest,
            read.outcome)  # fmt: skip


def _keys(record: CaptureRecord) -> tuple[str, str | None, str | None, str | None]:
    """What a line read back must still say for its row: execution, tenant and audience."""
    return (record.execution_id, record.tenant, record.principal, record.owner)


class StaleIndexError(Exception):
    """An indexed line no longer says what the index recorded (the journal was rewritten)."""


_T = TypeVar("_T")
_CORRUPT: Final = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})


def _moved(error: sqlite3.DatabaseError) -> bool:
    """Whether ``error`` says the file under the connection was replaced (another process made it again)."""
    name = getattr(error, "sqlite_errorname", "")
    return name.startswith(("SQLITE_READONLY", "SQLITE_IOERR"))


def _inode_of(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _corrupt(error: sqlite3.DatabaseError) -> bool:
    """Whether ``error`` says the index file is damaged (truncated, overwritten), not busy or locked."""
    return type(error) is sqlite3.DatabaseError or getattr(error, "sqlite_errorname", "") in _CORRUPT


_fallback: list[Path] = []
"""This process's own private temporary directory, made once when the user's cache cannot be used."""


def index_directory() -> Path:
    """Where the indexes live: ``index`` in the user's cache directory (``$XDG_CACHE_HOME/loom-otel``, else
    ``~/.cache/loom-otel`` on Linux), mode 0700; where that is not this user's alone, a directory
    ``tempfile.mkdtemp`` makes for this process (unguessable, 0700; the index is rebuilt per process)."""
    from platformdirs import user_cache_path

    try:
        return private_directory(user_cache_path(APP_NAME, appauthor=False) / "index")
    except OSError:
        if not _fallback:
            _fallback.append(Path(tempfile.mkdtemp(prefix="loom-otel-index-")))
        return _fallback[0]


def index_path_for(source: Path) -> Path:
    """Where the index of ``source`` lives: in ``index_directory``, named by a hash of its absolute path."""
    name = hashlib.sha256(str(source.absolute()).encode()).hexdigest()[:32]
    return index_directory() / f"{name}.sqlite"


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One capture record as the index knows it: its keys, audience, part count and where its line is."""

    origin: str
    seq: int
    execution_id: str
    tenant: str | None
    step_id: str
    principal: str | None
    owner: str | None
    parts: int
    file_id: int
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class AudienceRow:
    """The captures of one execution that share an audience (``CaptureIndex.audiences``)."""

    execution_id: str
    tenant: str | None
    principal: str | None
    owner: str | None
    calls: int
    parts: int
    steps: int
    first: int
    last: int


@dataclass(frozen=True, slots=True)
class ExecutionFilter:
    """What ``CaptureIndex.executions`` keeps: one tenant (``any_tenant``: every one), executions with a
    capture in [``since``, ``until``] (Unix ns), and ``search``: a substring of the execution id, or of
    a principal, model or trace id of a capture the reader may read; ``execution_id``: that execution
    only (found by the index on it: the rule is asked of its rows alone, not of every capture)."""

    tenant: str | None = None
    any_tenant: bool = True
    since: int | None = None
    until: int | None = None
    search: str = ""
    execution_id: str | None = None


@dataclass(frozen=True, slots=True)
class ListedExecution:
    """One execution (of one tenant) as a listing shows it: only the captures the reader may read."""

    execution_id: str
    tenant: str | None
    calls: int
    parts: int
    first: int
    last: int
    principals: tuple[str, ...]
    owners: tuple[str, ...]
    providers: tuple[str, ...]
    models: tuple[str, ...]


def _names(value: str | None) -> tuple[str, ...]:
    return tuple(sorted({v for v in (value or "").split("\x1f") if v}))


@dataclass(frozen=True, slots=True)
class _FileState:
    id: int
    size: int
    mtime_ns: int
    indexed: int
    tail: str
    """``_tail`` of the bytes indexed: whether they are still there when the file's size has not changed."""


_TAIL: Final = 64


def _tail(path: Path, end: int) -> str:
    """A digest of the last ``_TAIL`` bytes before ``end`` (``""``: unreadable)."""
    try:
        with path.open("rb") as fh:
            return _tail_of(fh, end)
    except OSError:
        return ""


def _tail_of(fh: BinaryIO, end: int) -> str:
    """``_tail`` of a file already open."""
    fh.seek(max(0, end - _TAIL))
    return hashlib.sha256(fh.read(min(end, _TAIL))).hexdigest()


class CaptureIndex:
    """The index of one journal directory or collector file (``refresh`` before ``select``)."""

    def __init__(self, source: str | os.PathLike[str], index_path: str | os.PathLike[str] | None = None) -> None:
        self.source = Path(source).absolute()
        self.is_journal = self.source.is_dir()
        if not self.is_journal and not self.source.is_file():
            raise FileNotFoundError(f"no journal directory or collector file at {str(self.source)!r}")
        self.path = Path(index_path) if index_path is not None else index_path_for(self.source)
        self._inode: int | None = None
        self._db = self._open()

    # -- storage ---------------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        """The index file, or a new one when there is none of this version; made by one process at a
        time (the others wait and open it)."""
        db = self._opened()
        if db is not None:
            return db
        with self._exclusive():
            return self._opened() or self._create()

    def _opened(self) -> sqlite3.Connection | None:
        try:
            uri = f"{self.path.absolute().as_uri()}?mode=rw"  # never made here: an empty file would be replaced
            db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=_BUSY)
            db.execute("PRAGMA synchronous=OFF")
            version = db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
            if version is not None and version[0] == INDEX_VERSION:
                self._inode = os.stat(self.path).st_ino
                return db
            db.close()
        except (sqlite3.DatabaseError, OSError):
            pass
        return None

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Held while the index file is made or replaced (a lock file beside it, in the private directory)."""
        fd = os.open(self.path.with_name(f".{self.path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _writing(self, *, wait: bool = True) -> Iterator[bool]:
        """Held while this connection writes the index: writers of every thread and process queue on a file
        lock, woken as soon as it is free, rather than in SQLite's busy handler, which sleeps 1 to 100 ms
        between tries (two workers indexing their reads would keep each other asleep). Whether it is held:
        ``wait=False`` does not queue."""
        fd = os.open(self.path.with_name(f".{self.path.name}.write"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
            else:
                yield True
        finally:
            os.close(fd)

    def _create(self) -> sqlite3.Connection:
        """A new, empty index, swapped in atomically (a concurrent reader keeps the old one)."""
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}.tmp")
        db = sqlite3.connect(tmp, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")  # kept by the file: readers never wait on a worker indexing
        db.executescript(_SCHEMA)
        db.execute("INSERT INTO meta VALUES('version', ?)", (INDEX_VERSION,))
        db.close()
        os.replace(tmp, self.path)
        db = sqlite3.connect(self.path, isolation_level=None, timeout=_BUSY)
        db.execute("PRAGMA synchronous=OFF")
        self._inode = os.stat(self.path).st_ino
        return db

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> CaptureIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- freshness -------------------------------------------------------------------------------
    def _files(self) -> dict[str, Path]:
        if not self.is_journal:
            return {"": self.source}
        return {str(p.relative_to(self.source)): p for _, p in all_segments(self.source)}

    def _known(self) -> dict[str, _FileState]:
        rows = self._db.execute("SELECT path, id, size, mtime_ns, indexed, tail FROM files").fetchall()
        return {path: _FileState(*row) for path, *row in rows}

    def _healed(self, query: Callable[[], _T]) -> _T:
        """``query``'s answer; an index file found damaged is made again from the source (never trusted:
        nothing it held is kept) and ``query`` asked once more."""
        try:
            return query()
        except sqlite3.DatabaseError as error:
            if _moved(error):  # another process replaced the file: this connection still has the old one
                self._reopened()
                self._refresh()
                return query()
            if not _corrupt(error):
                raise
        self._replace()
        self._refresh()
        return query()

    def refresh(self, *, wait: bool = True) -> int:
        """Bring the index up to date with the source; return how many records were added. A file made again
        since this connection opened it (a rebuild by another thread or process) is opened first: a kept
        connection would otherwise go on reading the unlinked old file. ``wait=False``: while another writer
        is indexing, leave it to that one and return at once."""
        if self._inode != _inode_of(self.path):
            self._reopened()
        return self._healed(lambda: self._refresh(wait=wait))

    def _refresh(self, *, wait: bool = True) -> int:
        files = self._files()
        stats = {rel: path.stat() for rel, path in files.items()}
        if self._todo(files, stats, self._known()) == []:
            return 0  # up to date (most queries): no write lock taken (``None``, stale: made again below)
        with self._writing(wait=wait) as writing:
            return self._indexed() if writing else 0

    def _indexed(self) -> int:
        """Index what ``_todo`` names (the writer's lock held). The files are looked at again under the lock:
        a size seen before waiting for it may be older than what another writer has indexed meanwhile, and
        would read as a file that shrank."""
        self._db.execute("BEGIN IMMEDIATE")  # one writer: another process or thread may have indexed meanwhile
        try:
            files = self._files()
            stats = {rel: path.stat() for rel, path in files.items()}
            known = self._known()
            todo = self._todo(files, stats, known)
            if todo is None:
                self._clear()
                known, todo = {}, list(files)
            empty = not known
            added = 0
            touched: set[tuple[str, str | None]] = set()
            for rel in todo:
                added += self._index_file(rel, files[rel], known.get(rel), touched)
            if empty and todo:
                self._db.execute(_STEP_INDEX)  # built once after a bulk load: faster than maintained
            self._sum(touched, whole=empty)
            self._db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):  # a damaged file may refuse that too
                self._db.execute("ROLLBACK")
            raise
        self._checkpointed()
        return added

    def _checkpointed(self) -> None:
        """The write-ahead log moved into the file and emptied once it holds ``_WAL_BYTES`` (the writer's lock
        held). SQLite's own checkpoints copy it but cannot start it again from its beginning while readers
        come and go, so with workers reading all the time it would only grow."""
        with contextlib.suppress(OSError):
            if os.stat(f"{self.path}-wal").st_size < _WAL_BYTES:
                return
        with contextlib.suppress(sqlite3.OperationalError):  # busy past the timeout: the next writer tries
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    @staticmethod
    def _todo(
        files: dict[str, Path], stats: dict[str, os.stat_result], known: dict[str, _FileState]
    ) -> list[str] | None:
        """The files with lines to index, or ``None`` when the index is stale (a file shrank, vanished or was
        rewritten in place) and must be made again. A file of the same size with a new mtime is rewritten only
        if the bytes indexed last are no longer there: an append under way has already set its mtime (the
        kernel sets it before the size), and is no rewrite."""
        stale = any(rel not in files for rel in known) or any(
            st.st_size < known[rel].indexed
            or (
                st.st_size == known[rel].size
                and st.st_mtime_ns != known[rel].mtime_ns
                and _tail(files[rel], known[rel].indexed) != known[rel].tail
            )
            for rel, st in stats.items()
            if rel in known
        )
        if stale:
            return None
        return [rel for rel, st in stats.items() if rel not in known or st.st_size > known[rel].indexed]

    def rebuild(self) -> None:
        """Empty the index, to be made again from the source at the next ``refresh``. In place: the file is
        kept, so the connections other threads and processes hold stay on it (a file replaced under a
        connection writing it would have that connection's rollback journal applied to the new one)."""
        if self._inode != _inode_of(self.path):
            self._reopened()
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._clear()
            self._db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            raise

    def _clear(self) -> None:
        """Every row gone (in the caller's write transaction); the step index is built again after the load."""
        for table in ("files", "records", "audiences", "reads", "read_tallies"):
            self._db.execute(f"DELETE FROM {table}")
        self._db.execute("DROP INDEX IF EXISTS by_step")

    def _replace(self) -> None:
        """A new, empty index file in place of a damaged one (unless another process replaced the file since
        this one opened it: that one is opened)."""
        self._db.close()
        with self._exclusive():
            replaced = self._inode != _inode_of(self.path)
            self._db = (self._opened() if replaced else None) or self._create()

    def _reopened(self) -> None:
        self._db.close()
        self._db = self._open()

    def _sum(self, touched: set[tuple[str, str | None]], *, whole: bool) -> None:
        """Sum the captures of the ``touched`` executions again into their summary rows (all of them in
        one pass when ``whole`` or when many were touched)."""
        if whole or len(touched) > _RESUM_ALL:
            self._db.execute("DELETE FROM audiences")
            self._db.execute(f"INSERT INTO audiences {_SUMMED}{_GROUPS}")
            return
        for key in touched:
            self._db.execute("DELETE FROM audiences WHERE execution_id=? AND tenant IS ?", key)
            self._db.execute(f"INSERT INTO audiences {_SUMMED} WHERE execution_id=? AND tenant IS ?{_GROUPS}", key)

    def _index_file(self, rel: str, path: Path, state: _FileState | None, touched: set[tuple[str, str | None]]) -> int:
        stat = path.stat()
        if state is None:
            file_id = self._db.execute(
                "INSERT INTO files(path, size, mtime_ns, indexed, tail) VALUES(?, 0, 0, 0, '')", (rel,)
            ).lastrowid
            start = 0
        else:
            file_id, start = state.id, state.indexed
        assert file_id is not None
        added = 0
        offset = start
        rows: list[tuple[object, ...]] = []
        reads: list[tuple[ReadRecord, tuple[int, int, int]]] = []
        insert = "INSERT OR IGNORE INTO records VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        with path.open("rb") as fh:
            fh.seek(start)
            for line in fh:
                if not line.endswith(b"\n"):
                    break  # a line still being written: indexed next time
                length = len(line)
                place = (file_id, offset, length)
                parsed = self._parse(line)
                for i, r in enumerate(parsed):
                    touched.add((r.execution_id, r.tenant))
                    origin = r.origin or f"~{file_id}:{offset}:{i}"
                    rows.append((origin, r.seq, r.execution_id, r.tenant, r.step_id, r.time, *place, *_audience(r)))
                read = None if parsed or not self.is_journal else parse_read_line(line)
                if read is not None:
                    reads.append((read, place))
                offset += length
                if len(rows) + len(reads) >= _BATCH:
                    added += self._inserted(insert, rows, reads)
            tail = _tail_of(fh, offset)
        added += self._inserted(insert, rows, reads)
        update = "UPDATE files SET size=?, mtime_ns=?, indexed=?, tail=? WHERE id=?"
        self._db.execute(update, (stat.st_size, stat.st_mtime_ns, offset, tail, file_id))
        return added

    def _inserted(
        self, insert: str, rows: list[tuple[object, ...]], reads: list[tuple[ReadRecord, tuple[int, int, int]]]
    ) -> int:
        """Insert the capture ``rows`` and the ``reads`` with where their lines are (both cleared), and tally
        the reads that name a part; return how many captures were new."""
        added = self._db.executemany(insert, rows).rowcount if rows else 0
        if reads:
            placed = [(*_read_columns(read), *place) for read, place in reads]
            self._db.executemany(f"INSERT OR IGNORE INTO reads VALUES({', '.join('?' * 12)})", placed)
            tallied = [(r.execution_id, _tenant_key(r.tenant), r.ref, r.reader, r.time) for r, _ in reads if r.ref]
            self._db.executemany(_TALLY, tallied)
        rows.clear()
        reads.clear()
        return added

    def _parse(self, line: bytes) -> list[CaptureRecord]:
        if self.is_journal:
            record = parse_journal_line(line)
            return [] if record is None else [record]
        return parse_collector_line(line)

    # -- queries ---------------------------------------------------------------------------------
    def select(
        self, execution_id: str, tenant: str | None, step_id: str | None, step_prefix: str | None
    ) -> Iterator[CaptureRecord]:
        """The matching capture records in log order, read back from the source lines."""
        return self.read(self.rows(execution_id, tenant, step_id, step_prefix))

    def rows(
        self, execution_id: str, tenant: str | None, step_id: str | None, step_prefix: str | None = None
    ) -> list[IndexRow]:
        """The matching records as the index alone knows them (no line is read), in log order."""
        sql = (
            "SELECT origin, seq, execution_id, tenant, step_id, principal, owner, parts, file_id, offset, length"
            " FROM records WHERE execution_id=? AND tenant IS ?"
        )
        params: list[object] = [execution_id, tenant]
        if step_id is not None:
            sql += " AND step_id=?"
            params.append(step_id)
        if step_prefix:
            sql += " AND step_id>=? AND step_id<?"
            params += [step_prefix, step_prefix + "\U0010ffff"]
        sql += " ORDER BY time, origin, seq"
        return self._healed(lambda: [IndexRow(*row) for row in self._db.execute(sql, params)])

    def read_tallies(
        self, execution_id: str, tenant: str | None, origin: str = ""
    ) -> tuple[list[tuple[str, str, int]], int]:
        """The viewer's ``read`` records of one execution that name a part, as (ref, reader, how many),
        each part's readers in order of their first read of it (from the index alone); and, as of the same
        moment of the index, the last ``seq`` of ``origin`` indexed (0: none)."""
        tallied = "SELECT ref, reader, reads FROM read_tallies WHERE execution_id=? AND tenant_key=? ORDER BY first"

        def query() -> tuple[list[tuple[str, str, int]], int]:
            self._db.execute("BEGIN")  # one snapshot for both (another writer may commit between)
            try:
                last = self._db.execute("SELECT max(seq) FROM reads WHERE origin=?", (origin,)).fetchone()[0]
                return self._db.execute(tallied, (execution_id, _tenant_key(tenant))).fetchall(), last or 0
            finally:
                self._db.execute("COMMIT")

        return self._healed(query)

    def reads(self, equal: Mapping[str, str | None], *, newest_first: bool) -> Iterator[ReadRecord]:
        """The viewer's ``read`` records whose columns ``equal`` names hold those values (``reader``,
        ``execution_id``, ``tenant``, ``outcome``), from the index alone: newest first, else in chain order
        per origin; streamed (a listing never holds every read at once)."""
        unknown = set(equal) - set(_READ_FILTERS)
        if unknown:
            raise ValueError(f"not a column of reads: {sorted(unknown)}")
        where = " AND ".join(f"{column} IS ?" for column in equal) or "1"
        order = "time DESC, origin DESC, seq DESC" if newest_first else "origin, seq"
        sql = f"SELECT {_READ_COLUMNS} FROM reads WHERE {where} ORDER BY {order}"
        cursor = self._healed(lambda: self._db.execute(sql, tuple(equal.values())))
        for time, reader, tenant, execution_id, ref, digest, outcome, origin, seq in cursor:
            yield ReadRecord(time, reader, tenant, execution_id, ref, digest, outcome, origin, seq)

    def read(self, rows: Iterable[IndexRow]) -> Iterator[CaptureRecord]:
        """The records of ``rows``, re-read and re-parsed from their lines (``StaleIndexError`` when a line
        no longer says what the index recorded)."""
        files = self._healed(lambda: self._db.execute("SELECT id, path FROM files").fetchall())
        paths = {fid: self.source / rel if rel else self.source for fid, rel in files}
        handles: dict[int, int] = {}
        try:
            for row in rows:
                fd = handles.get(row.file_id)
                if fd is None:
                    fd = handles[row.file_id] = os.open(paths[row.file_id], os.O_RDONLY)
                line = os.pread(fd, row.length, row.offset)
                origin, seq = row.origin, row.seq
                record = next((r for r in self._parse(line) if r.seq == seq and (r.origin or origin) == origin), None)
                if record is None or _keys(record) != (row.execution_id, row.tenant, row.principal, row.owner):
                    raise StaleIndexError(f"index {str(self.path)!r} no longer matches {str(self.source)!r}")
                yield record
        finally:
            for fd in handles.values():
                with contextlib.suppress(OSError):
                    os.close(fd)

    def last_of_step(self, execution_id: str, tenant: str | None, step_id: str) -> tuple[str, int] | None:
        """The (origin, seq) of a step's last capture in log order: the attempt the application received."""
        row = self._healed(
            lambda: self._db.execute(
                "SELECT origin, seq FROM records WHERE execution_id=? AND tenant IS ? AND step_id=?"
                " ORDER BY time DESC, origin DESC, seq DESC LIMIT 1",
                (execution_id, tenant, step_id),
            ).fetchone()
        )
        return None if row is None else (str(row[0]), int(row[1]))

    def principals(self, execution_id: str, tenant: str | None) -> frozenset[str | None]:
        """The principals of the execution's captures (``None``: a capture of none), from its summary rows."""
        sql = "SELECT DISTINCT principal FROM audiences WHERE execution_id=? AND tenant IS ?"
        return frozenset(p for (p,) in self._healed(lambda: self._db.execute(sql, (execution_id, tenant)).fetchall()))

    def audiences(self) -> Iterator[AudienceRow]:
        """Per (tenant, execution, principal, owner): its captures, parts, steps and first and last capture
        time, from the index alone (no line is read): what a listing filters by the reading rule."""
        sql = "SELECT execution_id, tenant, principal, owner, calls, parts, steps, first, last FROM audiences"
        for row in self._healed(lambda: self._db.execute(sql).fetchall()):
            yield AudienceRow(*row)

    def executions(
        self,
        readable: Callable[[str | None, str | None, str | None], bool],
        keep: ExecutionFilter,
        offset: int,
        limit: int,
    ) -> tuple[list[ListedExecution], int]:
        """A page of the executions with a capture ``readable(tenant, principal, owner)`` admits, newest
        first, and how many there are: the rule runs inside the query (an SQLite function), so only the
        rows of the page leave it; principals, owners, providers and models come from admitted rows only."""
        where, params = ["readable(tenant, principal, owner)"], list[object]()
        if not keep.any_tenant:
            where.append("tenant IS ?")
            params.append(keep.tenant)
        if keep.execution_id is not None:
            where.insert(0, "execution_id = ?")
            params.insert(0, keep.execution_id)
        having, after = ["1"], list[object]()
        if keep.since is not None:
            having.append("max(time) >= ?")
            after.append(keep.since)
        if keep.until is not None:
            having.append("min(time) <= ?")
            after.append(keep.until)
        if keep.search:
            having.append(
                "(instr(execution_id, ?) OR max(instr(coalesce(principal, ''), ?)) OR max(instr(model, ?))"
                " OR max(instr(coalesce(trace_id, ''), ?)))"
            )
            after += [keep.search] * 4
        if keep.search:  # a capture's trace id may be what is searched for: its rows
            columns = "count(*), sum(parts), min(time), max(time), group_concat(principal, char(31)),"
            columns += " group_concat(owner, char(31)), group_concat(provider, char(31)), group_concat(model, char(31))"
            rows_of = "records"
        else:  # one summary row per execution and audience
            columns = "sum(calls), sum(parts), min(first), max(last), group_concat(principal, char(31)),"
            columns += " group_concat(owner, char(31)), group_concat(providers, ''), group_concat(models, '')"
            having = [h.replace("max(time)", "max(last)").replace("min(time)", "min(first)") for h in having]
            rows_of = "audiences"
        grouped = (
            f"SELECT execution_id, tenant, {columns} FROM {rows_of} WHERE {' AND '.join(where)}"
            f" GROUP BY execution_id, tenant HAVING {' AND '.join(having)}"
        )
        newest = "max(time)" if keep.search else "max(last)"

        def query() -> tuple[list[ListedExecution], int]:
            self._db.create_function("readable", 3, lambda t, p, o: bool(readable(t, p, o)), deterministic=True)
            total = int(self._db.execute(f"SELECT count(*) FROM ({grouped})", [*params, *after]).fetchone()[0])
            page = self._db.execute(
                f"{grouped} ORDER BY {newest} DESC, execution_id DESC LIMIT ? OFFSET ?",
                [*params, *after, max(0, limit), max(0, offset)],
            )
            rows = [
                ListedExecution(eid, tenant, calls, parts, first, last, *(_names(v) for v in names))
                for eid, tenant, calls, parts, first, last, *names in page
            ]
            return rows, total

        return self._healed(query)

    def __len__(self) -> int:
        return int(self._healed(lambda: self._db.execute("SELECT count(*) FROM records").fetchone()[0]))
