"""``verify``: prove a chain of audit records whole, or locate what is wrong with it.

Sources: a journal directory (``<dir>/<origin>/<segment>.jsonl``), a single journal segment, or the
OTLP JSON lines a collector ``file`` exporter writes (a file, or a directory of ``*.json*`` files).
Input is streamed into a temporary SQLite table (memory stays bounded whatever the input size), then
each origin's chain is walked in ``seq`` order. Reported per origin:

- ``records`` (distinct seqs), ``gaps`` (missing seq ranges, including before the first one seen);
- ``modified``: records whose hash does not recompute from their content; ``broken_links``: records
  whose ``prev`` is not the hash of the record before them (an edit with a recomputed hash, an
  insertion, a deletion that renumbered the rest);
- ``reordered``: records found after a higher seq of their chain (journal input only: a journal is
  written in order, while an OTLP hop may legitimately reorder);
- ``duplicates_identical`` (fine: at-least-once delivery) and ``duplicates_conflicting`` (the same
  seq with different content: tampering);
- checkpoints: ``bad_signatures``, ``checkpoint_mismatches`` (head or size disagree with the chain),
  unsigned ones counted;
- ``unanchored``: the seq range after the last valid checkpoint (never "ok": nothing proves it was
  not cut short); ``torn``: bytes of a line cut short by a crash at the end of a journal chain.

``malformed`` counts input lines (or chain events) that cannot be read. A report is ``ok`` only when
there is at least one record and nothing at all is reported.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from loom_otel.audit._otlp_json import records_in_request
from loom_otel.core import _attributes as attr
from loom_otel.core._canonical import GENESIS, canonical_json, chain_hash, sha256_hex
from loom_otel.core._checkpoint import (
    CHECKPOINT_HEAD,
    CHECKPOINT_KEY,
    CHECKPOINT_SIGNATURE,
    CHECKPOINT_SIZE,
    checkpoint_payload,
    verify_signature,
)
from loom_otel.core._journal_reader import list_origins, read_lines, segments

__all__ = ["OriginReport", "VerifyReport", "verify"]

Progress = Callable[[int, int], None]
SourceKind = Literal["journal", "otlp"]
MAX_LOCATIONS: Final = 1000
_PROGRESS_EVERY: Final = 4 << 20
_BATCH: Final = 5000


@dataclass(frozen=True, slots=True)
class OriginReport:
    """What ``verify`` found about one chain."""

    origin: str
    records: int
    first_seq: int
    last_seq: int
    gaps: tuple[tuple[int, int], ...] = ()
    missing: int = 0
    modified: tuple[int, ...] = ()
    broken_links: tuple[int, ...] = ()
    reordered: tuple[int, ...] = ()
    duplicates_identical: int = 0
    duplicates_conflicting: tuple[int, ...] = ()
    checkpoints: int = 0
    unsigned_checkpoints: int = 0
    bad_signatures: tuple[int, ...] = ()
    checkpoint_mismatches: tuple[int, ...] = ()
    unanchored: tuple[int, int] | None = None
    torn: int = 0

    def problems(self, *, require_signed: bool = False) -> list[str]:
        found = [
            f"{name} {len(value)}"
            for name, value in (
                ("gaps", self.gaps),
                ("modified", self.modified),
                ("broken_links", self.broken_links),
                ("reordered", self.reordered),
                ("duplicates_conflicting", self.duplicates_conflicting),
                ("bad_signatures", self.bad_signatures),
                ("checkpoint_mismatches", self.checkpoint_mismatches),
            )
            if value
        ]
        if self.unanchored is not None:
            found.append(f"unanchored {self.unanchored[0]}..{self.unanchored[1]}")
        if self.torn:
            found.append(f"torn tail {self.torn} bytes")
        if require_signed and self.unsigned_checkpoints:
            found.append(f"unsigned_checkpoints {self.unsigned_checkpoints}")
        return found


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The result of ``verify``: one ``OriginReport`` per chain, plus input-level findings."""

    source: str
    kind: SourceKind
    origins: tuple[OriginReport, ...]
    lines: int
    malformed: int
    require_signed: bool = False
    problems: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def records(self) -> int:
        return sum(o.records for o in self.origins)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "ok": self.ok,
            "records": self.records,
            "lines": self.lines,
            "malformed": self.malformed,
            "problems": list(self.problems),
            "origins": [asdict(o) for o in self.origins],
        }


def verify(
    source: str | os.PathLike[str],
    *,
    public_keys: Iterable[str] = (),
    require_signed: bool = False,
    progress: Progress | None = None,
) -> VerifyReport:
    """Verify a journal directory or collector OTLP JSON output; see the module docstring.

    ``public_keys``: hex raw Ed25519 keys (``_checkpoint.load_public_key``) whose signatures are
    trusted; when given, a checkpoint signed by any other key is a bad signature. ``progress`` is
    called with ``(bytes read, total bytes)`` every few MiB.
    """
    path = Path(source)
    kind: SourceKind = "journal" if _is_journal(path) else "otlp"
    trusted = frozenset(k.lower() for k in public_keys)
    with tempfile.TemporaryDirectory(prefix="loom-verify-") as tmp:
        db = sqlite3.connect(os.path.join(tmp, "records.db"))
        try:
            db.executescript(
                "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                "CREATE TABLE r(origin TEXT, seq INTEGER, pos INTEGER, hash TEXT, prev TEXT, ok INTEGER,"
                " digest TEXT, cp INTEGER, cp_size INTEGER, cp_head TEXT, cp_sig TEXT);"
            )
            ingest = _Ingest(db, trusted, kind)
            if kind == "journal":
                _ingest_journal(path, ingest, progress)
            else:
                _ingest_otlp(path, ingest, progress)
            ingest.flush()
            db.execute("CREATE INDEX r_order ON r(origin, seq, pos)")
            origins = tuple(_walk(db, ingest))
        finally:
            db.close()
    problems = [f"{o.origin}: {p}" for o in origins for p in o.problems(require_signed=require_signed)]
    if ingest.malformed:
        problems.append(f"malformed {ingest.malformed}")
    if not origins:
        problems.append("no audit records")
    return VerifyReport(str(path), kind, origins, ingest.lines, ingest.malformed, require_signed, tuple(problems))


# -- ingest ------------------------------------------------------------------------------------


class _Ingest:
    def __init__(self, db: sqlite3.Connection, trusted: frozenset[str], kind: SourceKind) -> None:
        self.db = db
        self.trusted = trusted
        self.kind = kind
        self.rows: list[tuple[object, ...]] = []
        self.pos = 0
        self.lines = 0
        self.malformed = 0
        self.max_seq: dict[str, int] = {}
        self.reordered: dict[str, list[int]] = {}
        self.torn: dict[str, int] = {}

    def add(self, record: dict[str, object] | None) -> None:
        row = _row(record, self.trusted) if record is not None else None
        if row is None:
            self.malformed += 1
            return
        origin, seq = str(row[0]), int(str(row[1]))
        if self.kind == "journal":
            highest = self.max_seq.get(origin, 0)
            if seq < highest:
                found = self.reordered.setdefault(origin, [])
                if len(found) < MAX_LOCATIONS:
                    found.append(seq)
            self.max_seq[origin] = max(highest, seq)
        self.pos += 1
        self.rows.append((row[0], row[1], self.pos, *row[2:]))
        if len(self.rows) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.db.executemany("INSERT INTO r VALUES (?,?,?,?,?,?,?,?,?,?,?)", self.rows)
            self.rows.clear()


def _row(record: dict[str, object], trusted: frozenset[str]) -> tuple[object, ...] | None:
    """``(origin, seq, hash, prev, ok, digest, cp, cp_size, cp_head, cp_sig)`` or ``None`` if unusable."""
    origin, seq, digest, prev = record.get("origin"), record.get("seq"), record.get("hash"), record.get("prev")
    if not (isinstance(origin, str) and isinstance(digest, str) and isinstance(prev, str)):
        return None
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 < seq < 1 << 62:
        return None
    try:
        body = canonical_json({k: v for k, v in record.items() if k != "hash"})
        ok = chain_hash(prev, body) == digest
        identity = sha256_hex(canonical_json(record))
    except (ValueError, TypeError, OverflowError, RecursionError):
        return None
    is_cp = record.get("type") == attr.RECORD_CHECKPOINT
    cp_size = cp_head = cp_sig = None
    if is_cp:
        cp_size, cp_head, cp_sig = _checkpoint(record, trusted)
    return (origin, seq, digest, prev, int(ok), identity, int(is_cp), cp_size, cp_head, cp_sig)


def _checkpoint(record: dict[str, object], trusted: frozenset[str]) -> tuple[int | None, str | None, str]:
    attributes = record.get("attributes")
    if not isinstance(attributes, dict):
        return None, None, "bad"
    size, head = attributes.get(CHECKPOINT_SIZE), attributes.get(CHECKPOINT_HEAD)
    signature, key = attributes.get(CHECKPOINT_SIGNATURE, ""), attributes.get(CHECKPOINT_KEY, "")
    if isinstance(size, bool) or not isinstance(size, int) or not isinstance(head, str):
        return None, None, "bad"
    if not isinstance(signature, str) or not isinstance(key, str):
        return size, head, "bad"
    if not signature and not key:
        return size, head, "unsigned"
    time_ns = record.get("time")
    if not isinstance(time_ns, int) or (trusted and key.lower() not in trusted):
        return size, head, "bad"
    payload = checkpoint_payload(str(record["origin"]), size, head, time_ns)
    return size, head, "valid" if verify_signature(key, signature, payload) else "bad"


def _parse_line(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _is_journal(path: Path) -> bool:
    if path.is_dir():
        return any(segments(path / origin) for origin in list_origins(path))
    return False


def _ingest_journal(root: Path, ingest: _Ingest, progress: Progress | None) -> None:
    total = sum(p.stat().st_size for o in list_origins(root) for _, p in segments(root / o))
    done = reported = 0
    for origin in list_origins(root):
        for line in read_lines(root / origin):
            ingest.lines += 1
            done += line.size
            if line.torn:
                ingest.torn[origin] = ingest.torn.get(origin, 0) + line.size
                continue
            if line.too_long or not line.data.strip():
                ingest.malformed += 1
                continue
            value = _parse_line(line.data)
            ingest.add(value if isinstance(value, dict) else None)
            if progress is not None and done - reported >= _PROGRESS_EVERY:
                reported = done
                progress(done, total)
    if progress is not None:
        progress(done, total)


def _otlp_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and ".json" in p.name)
    return [path]


def _ingest_otlp(path: Path, ingest: _Ingest, progress: Progress | None) -> None:
    files = _otlp_files(path)
    total = sum(p.stat().st_size for p in files if p.exists())
    done = reported = 0
    for file in files:
        with file.open("rb") as fh:
            for data in fh:
                done += len(data)
                if not data.strip():
                    continue
                ingest.lines += 1
                for record in _records_of_line(data):
                    ingest.add(record)
                if progress is not None and done - reported >= _PROGRESS_EVERY:
                    reported = done
                    progress(done, total)
    if progress is not None:
        progress(done, total)


def _records_of_line(data: bytes) -> Iterator[dict[str, object] | None]:
    value = _parse_line(data)
    if not isinstance(value, dict):
        yield None
        return
    if "origin" in value and "seq" in value:  # a journal record line
        yield value
        return
    try:
        yield from list(records_in_request(value))
    except (ValueError, TypeError, RecursionError):
        yield None


# -- walk --------------------------------------------------------------------------------------


def _walk(db: sqlite3.Connection, ingest: _Ingest) -> Iterator[OriginReport]:
    origins = [str(r[0]) for r in db.execute("SELECT DISTINCT origin FROM r ORDER BY origin")]
    for origin in origins:
        yield _walk_origin(db, origin, ingest)
    for origin, torn in sorted(ingest.torn.items()):
        if origin not in origins:
            yield OriginReport(origin, 0, 0, 0, torn=torn)


class _Chain:
    """Accumulates one origin's findings while its records stream by in seq order."""

    def __init__(self) -> None:
        self.records = 0
        self.first = self.last = 0
        self.prev_seq = 0
        self.prev_hash: str | None = None
        self.anchored = 0
        self.gaps: list[tuple[int, int]] = []
        self.missing = 0
        self.lists: dict[str, list[int]] = {
            k: [] for k in ("modified", "broken_links", "conflicting", "bad_signatures", "mismatches")
        }
        self.identical = 0
        self.checkpoints = 0
        self.unsigned = 0

    def note(self, key: str, seq: int) -> None:
        found = self.lists[key]
        if len(found) < MAX_LOCATIONS:
            found.append(seq)


def _walk_origin(db: sqlite3.Connection, origin: str, ingest: _Ingest) -> OriginReport:
    chain = _Chain()
    rows = db.execute(
        "SELECT seq, hash, prev, ok, digest, cp, cp_size, cp_head, cp_sig FROM r WHERE origin=? ORDER BY seq, pos",
        (origin,),
    )
    group: list[tuple[Any, ...]] = []
    for row in rows:
        if group and row[0] != group[0][0]:
            _take(db, origin, chain, group)
            group = []
        group.append(row)
    if group:
        _take(db, origin, chain, group)
    unanchored = (chain.anchored + 1, chain.last) if chain.last > chain.anchored else None
    return OriginReport(
        origin=origin,
        records=chain.records,
        first_seq=chain.first,
        last_seq=chain.last,
        gaps=tuple(chain.gaps),
        missing=chain.missing,
        modified=tuple(chain.lists["modified"]),
        broken_links=tuple(chain.lists["broken_links"]),
        reordered=tuple(ingest.reordered.get(origin, ())),
        duplicates_identical=chain.identical,
        duplicates_conflicting=tuple(chain.lists["conflicting"]),
        checkpoints=chain.checkpoints,
        unsigned_checkpoints=chain.unsigned,
        bad_signatures=tuple(chain.lists["bad_signatures"]),
        checkpoint_mismatches=tuple(chain.lists["mismatches"]),
        unanchored=unanchored,
        torn=ingest.torn.get(origin, 0),
    )


def _take(db: sqlite3.Connection, origin: str, chain: _Chain, group: list[tuple[Any, ...]]) -> None:
    seq = int(group[0][0])
    if len({row[4] for row in group}) > 1:
        chain.note("conflicting", seq)
    else:
        chain.identical += len(group) - 1
    rep = next((row for row in group if row[3]), group[0])
    _, digest, prev, ok, _, is_cp, cp_size, cp_head, cp_sig = rep
    chain.records += 1
    chain.first = chain.first or seq
    chain.last = seq
    if not ok:
        chain.note("modified", seq)
    if seq > chain.prev_seq + 1:
        if len(chain.gaps) < MAX_LOCATIONS:
            chain.gaps.append((chain.prev_seq + 1, seq - 1))
        chain.missing += seq - chain.prev_seq - 1
    elif (seq == 1 and prev != GENESIS) or (chain.prev_hash is not None and prev != chain.prev_hash):
        chain.note("broken_links", seq)
    chain.prev_seq, chain.prev_hash = seq, str(digest)
    if is_cp:
        chain.checkpoints += 1
        if cp_sig == "bad":
            chain.note("bad_signatures", seq)
            return
        if cp_sig == "unsigned":
            chain.unsigned += 1
        if cp_size is None or not _head_matches(db, origin, size=int(cp_size), head=str(cp_head), seq=seq, prev=prev):
            chain.note("mismatches", seq)
            return
        if ok:
            chain.anchored = max(chain.anchored, seq)


def _head_matches(db: sqlite3.Connection, origin: str, *, size: int, head: str, seq: int, prev: str) -> bool:
    if size >= seq:
        return False
    if size == seq - 1:
        return head == prev and (size > 0 or head == GENESIS)
    found = {str(r[0]) for r in db.execute("SELECT hash FROM r WHERE origin=? AND seq=? AND ok=1", (origin, size))}
    return head in found
