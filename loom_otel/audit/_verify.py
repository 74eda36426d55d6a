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
  seq with different content: tampering); ``duplicates_cut`` (fine, OTLP input only): copies whose
  strings an attribute length limit (``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``) cut to one length, each a
  cut of a whole copy of the same record that verifies (the chained exporter resends cut records
  whole); a copy cut from the origin's name too is matched to the one origin that name starts;
- checkpoints: ``bad_signatures``, ``checkpoint_mismatches`` (head or size disagree with the chain),
  unsigned ones counted, the keys that signed them listed; an origin whose checkpoints are partly
  signed and partly not (``mixed_signing``: signatures stripped), or signed by more than one key
  (``key_changes``: re-signed), fails;
- ``unanchored``: the seq range after the last valid checkpoint (never "ok": nothing proves it was
  not cut short); ``torn``: bytes of a line cut short by a crash at the end of a journal chain;
- ``intact_through``: the last seq of the run from seq 1 with no gap, modified record, broken link or
  conflicting copy; ``signed_through``: the records (1..n) the last checkpoint in that run signed by a
  trusted key covers (0 without one, and always 0 without trusted keys): what a record's standing is
  made of (``_standing``).

``malformed`` counts input lines (or chain events) that cannot be read. A report is ``ok`` only when
there is at least one record and nothing at all is reported.

What one source cannot prove (DESIGN "Audit journal"): that its tail was not cut back to a checkpoint
or a whole origin deleted (a chain that ends at a valid checkpoint is whole as far as it knows), and,
without trusted keys, who signed its checkpoints (a chain re-signed with another key is consistent).
``against`` names a witness, the collector's archive of the same chains (or a journal, given an
archive): both are ingested and cross-checked (``CrossCheck``): origins and records present in one and
not the other, records that differ, and checkpoint heads one holds that the other's records contradict.
Records the journal holds past the archive's last record of their origin are named "not yet in the
archive" (in flight, or buffered by a collector that stopped before writing them), never a cut.
What went unchecked is listed in ``VerifyReport.limits`` (the CLI's OK line says it).
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
from loom_otel.core.journal import (
    CHECKPOINT_HEAD,
    CHECKPOINT_KEY,
    CHECKPOINT_SIGNATURE,
    CHECKPOINT_SIZE,
    GENESIS,
    canonical_json,
    chain_hash,
    checkpoint_payload,
    list_origins,
    read_lines,
    segments,
    sha256_hex,
    verify_signature,
)
from loom_otel.core.journal import attributes as attr

__all__ = ["CrossCheck", "OriginReport", "VerifyReport", "verify"]

Progress = Callable[[int, int], None]
SourceKind = Literal["journal", "otlp"]
MAX_LOCATIONS: Final = 1000
_PROGRESS_EVERY: Final = 4 << 20
_BATCH: Final = 5000
_SOURCE: Final = 0
_WITNESS: Final = 1
_KEY_SHOWN: Final = 16
_NOT_YET: Final = "not yet in the archive"


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
    signed_checkpoints: int = 0
    signing_keys: tuple[str, ...] = ()
    bad_signatures: tuple[int, ...] = ()
    checkpoint_mismatches: tuple[int, ...] = ()
    unanchored: tuple[int, int] | None = None
    torn: int = 0
    duplicates_cut: int = 0
    intact_through: int = 0
    signed_through: int = 0

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
        if self.signed_checkpoints and self.unsigned_checkpoints:
            found.append(f"mixed_signing {self.signed_checkpoints} signed, {self.unsigned_checkpoints} unsigned")
        elif require_signed and self.unsigned_checkpoints:
            found.append(f"unsigned_checkpoints {self.unsigned_checkpoints}")
        if len(self.signing_keys) > 1:
            found.append(f"key_changes {len(self.signing_keys)} signing keys")
        return found


@dataclass(frozen=True, slots=True)
class CrossCheck:
    """How the source and its witness (``verify(source, against=witness)``) agree.

    Seq ranges are ``(origin, first, last)``; lists stop at ``MAX_LOCATIONS`` entries (the ``*_count``
    fields count everything). ``contradicted_heads``: ``(holder, origin, seq)`` of a checkpoint
    (``holder`` is ``"source"`` or ``"witness"``) whose head is not the hash the other side holds at
    that position.
    """

    witness: str
    kind: SourceKind
    records: int
    malformed: int
    source_kind: SourceKind = "journal"
    origins_only_in_source: tuple[tuple[str, int], ...] = ()
    origins_only_in_witness: tuple[tuple[str, int], ...] = ()
    only_in_source: tuple[tuple[str, int, int], ...] = ()
    only_in_source_count: int = 0
    only_in_witness: tuple[tuple[str, int, int], ...] = ()
    only_in_witness_count: int = 0
    differing: tuple[tuple[str, int], ...] = ()
    contradicted_heads: tuple[tuple[str, str, int], ...] = ()
    local_origins: tuple[tuple[str, int], ...] = ()
    """``(origin, records)`` on one side only whose records are all marked local (``loom.audit.local``:
    reads of ``serve`` without ``--forward``, tombstones of ``erase``): kept in the journal, never
    forwarded, so not a problem."""
    not_yet_archived: tuple[tuple[str, int, int], ...] = ()
    """Runs the journal holds past the archive's last record of their origin (``(origin, first, last)``):
    not yet in the archive (in flight, or buffered by a collector that stopped before writing them),
    never a cut; not counted in ``only_in_source`` / ``only_in_witness``."""
    not_yet_archived_count: int = 0

    def problems(self) -> list[str]:
        cut, undelivered = "cut from the journal", "not delivered to the archive, or lost on the way"
        # what a record missing from one side most likely means, when one side is the journal
        hints = {("journal", "otlp"): (undelivered, cut), ("otlp", "journal"): (cut, undelivered)}
        hint = hints.get((self.source_kind, self.kind), ("", ""))
        source_hint, witness_hint = (f"; {h}" if h else "" for h in hint)
        # a whole origin the archive lacks is at its tail too
        origin_hints = {("journal", "otlp"): (_NOT_YET, cut), ("otlp", "journal"): (cut, _NOT_YET)}
        source_origin, witness_origin = (
            f"; {h}" if h else "" for h in origin_hints.get((self.source_kind, self.kind), ("", ""))
        )
        found = [
            f"{origin}: origin only in the source ({n} records{source_origin})"
            for origin, n in self.origins_only_in_source
        ]
        found += [
            f"{origin}: origin only in the witness ({n} records{witness_origin})"
            for origin, n in self.origins_only_in_witness
        ]
        if self.not_yet_archived_count:
            found.append(
                f"{_NOT_YET} {self.not_yet_archived_count} records ({_ranges(self.not_yet_archived)}; the journal "
                "holds them: in flight, or buffered by a collector that stopped before writing them)"
            )
        if self.only_in_witness_count:
            found.append(
                f"only_in_witness {self.only_in_witness_count} records ({_ranges(self.only_in_witness)}{witness_hint})"
            )
        if self.only_in_source_count:
            found.append(
                f"only_in_source {self.only_in_source_count} records ({_ranges(self.only_in_source)}{source_hint})"
            )
        if self.differing:
            found.append(f"differing {len(self.differing)} records")
        if self.contradicted_heads:
            found.append(f"contradicted_heads {len(self.contradicted_heads)} checkpoints")
        if self.malformed:
            found.append(f"witness malformed {self.malformed}")
        if not self.records:
            found.append("witness holds no audit records")
        return found


def _ranges(ranges: tuple[tuple[str, int, int], ...]) -> str:
    shown = ", ".join(f"{o} {a}..{b}" if a != b else f"{o} {a}" for o, a, b in ranges[:3])
    return shown + (", ..." if len(ranges) > 3 else "")


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The result of ``verify``: one ``OriginReport`` per chain, plus input-level findings.

    ``witness``: the cross-check, when ``verify`` was given one. ``limits``: what this run could not
    check (no witness; signatures not checked against a trusted key; unsigned checkpoints accepted).
    """

    source: str
    kind: SourceKind
    origins: tuple[OriginReport, ...]
    lines: int
    malformed: int
    require_signed: bool = False
    problems: tuple[str, ...] = field(default=())
    witness: CrossCheck | None = None
    limits: tuple[str, ...] = field(default=())

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
            "limits": list(self.limits),
            "origins": [asdict(o) for o in self.origins],
            "witness": None if self.witness is None else asdict(self.witness),
        }


def verify(
    source: str | os.PathLike[str],
    *,
    public_keys: Iterable[str] = (),
    require_signed: bool = False,
    progress: Progress | None = None,
    against: str | os.PathLike[str] | None = None,
) -> VerifyReport:
    """Verify a journal directory or collector OTLP JSON output; see the module docstring.

    ``public_keys``: hex raw Ed25519 keys (``_checkpoint.load_public_key``) whose signatures are
    trusted; when given, a checkpoint signed by any other key is a bad signature and an unsigned one a
    failure (as with ``require_signed``: stripping signatures must not get past a trusted key).
    ``against``: a witness of the same chains (the collector archive of a journal, or the journal of
    an archive) to cross-check with (``VerifyReport.witness``). ``progress`` is called with
    ``(bytes read, total bytes)`` every few MiB, for each input in turn.
    """
    path = Path(source)
    witness_path = None if against is None else Path(against)
    trusted = frozenset(k.lower() for k in public_keys)
    require_signed = require_signed or bool(trusted)
    witness: CrossCheck | None = None
    with tempfile.TemporaryDirectory(prefix="loom-verify-") as tmp:
        db = sqlite3.connect(os.path.join(tmp, "records.db"))
        try:
            db.executescript(
                "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                "CREATE TABLE r(src INTEGER, origin TEXT, seq INTEGER, pos INTEGER, hash TEXT, prev TEXT,"
                " ok INTEGER, digest TEXT, cp INTEGER, cp_size INTEGER, cp_head TEXT, cp_sig TEXT, cp_key TEXT,"
                " cut INTEGER DEFAULT 0);"
                "CREATE TABLE body(src INTEGER, pos INTEGER, json TEXT, PRIMARY KEY (src, pos));"
            )
            ingest = _ingest(db, path, _SOURCE, trusted=trusted, progress=progress)
            seen = None
            if witness_path is not None:
                seen = _ingest(db, witness_path, _WITNESS, trusted=trusted, progress=progress)
            db.execute("CREATE INDEX r_order ON r(src, origin, seq, pos)")
            for src in (_SOURCE, _WITNESS):
                _mark_cut_copies(db, src)
            origins = tuple(_walk(db, ingest))
            if witness_path is not None and seen is not None:
                witness = _cross_check(db, str(witness_path), seen, ingest)
        finally:
            db.close()
    problems = [f"{o.origin}: {p}" for o in origins for p in o.problems(require_signed=require_signed)]
    if ingest.malformed:
        problems.append(f"malformed {ingest.malformed}")
    if not origins:
        problems.append("no audit records")
    if witness is not None:
        problems += witness.problems()
    limits = _limits(origins, witness, trusted, require_signed)
    return VerifyReport(
        str(path),
        ingest.kind,
        origins,
        ingest.lines,
        ingest.malformed,
        require_signed,
        tuple(problems),
        witness,
        limits,
    )


def _limits(
    origins: tuple[OriginReport, ...], witness: CrossCheck | None, trusted: frozenset[str], require_signed: bool
) -> tuple[str, ...]:
    """What this run could not check, in the words the CLI's OK line uses."""
    limits = []
    if witness is None:
        limits.append(
            "no witness (--against ARCHIVE): a tail cut back to a checkpoint or a deleted origin would not show"
        )
    keys = sorted({k for o in origins for k in o.signing_keys})
    if not trusted and keys:
        shown = ", ".join(k[:_KEY_SHOWN] for k in keys)
        limits.append(
            f"signatures not checked against a trusted key (--key): signed by {shown}, "
            "which a chain re-signed with another key would also be"
        )
    unsigned = sum(o.unsigned_checkpoints for o in origins)
    if unsigned and not require_signed:
        limits.append(f"{unsigned} unsigned checkpoint(s) accepted (--key or --require-signed refuses them)")
    return tuple(limits)


def _kind(path: Path) -> SourceKind:
    return "journal" if _is_journal(path) else "otlp"


def _ingest(
    db: sqlite3.Connection, path: Path, src: int, *, trusted: frozenset[str], progress: Progress | None
) -> _Ingest:
    kind = _kind(path)
    ingest = _Ingest(db, trusted, kind, src)
    if kind == "journal":
        _ingest_journal(path, ingest, progress)
    else:
        _ingest_otlp(path, ingest, progress)
    ingest.flush()
    return ingest


# -- ingest ------------------------------------------------------------------------------------


class _Ingest:
    def __init__(self, db: sqlite3.Connection, trusted: frozenset[str], kind: SourceKind, src: int) -> None:
        self.db = db
        self.src = src
        self.trusted = trusted
        self.kind = kind
        self.rows: list[tuple[object, ...]] = []
        self.bodies: list[tuple[int, int, str]] = []
        """The records of an OTLP input, kept to tell a copy cut by an attribute length limit."""
        self.pos = 0
        self.lines = 0
        self.malformed = 0
        self.max_seq: dict[str, int] = {}
        self.reordered: dict[str, list[int]] = {}
        self.torn: dict[str, int] = {}
        self.travelling: set[str] = set()
        """Origins holding a record (not a checkpoint) its writer did not mark local (``loom.audit.local``)."""

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
        if origin not in self.travelling and not _local(record):
            self.travelling.add(origin)
        self.pos += 1
        self.rows.append((self.src, row[0], row[1], self.pos, *row[2:]))
        if self.kind == "otlp" and record is not None:
            self.bodies.append((self.src, self.pos, json.dumps(record, sort_keys=True)))
        if len(self.rows) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.db.executemany(
                "INSERT INTO r (src, origin, seq, pos, hash, prev, ok, digest, cp, cp_size, cp_head, cp_sig, cp_key)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                self.rows,
            )
            self.rows.clear()
        if self.bodies:
            self.db.executemany("INSERT INTO body VALUES (?,?,?)", self.bodies)
            self.bodies.clear()


def _local(record: dict[str, object] | None) -> bool:
    """A checkpoint, or a record its writer keeps in the journal only (``loom.audit.local``)."""
    if record is None or record.get("type") == attr.RECORD_CHECKPOINT:
        return True
    attributes = record.get("attributes")
    return isinstance(attributes, dict) and attributes.get(attr.AUDIT_LOCAL) is True


def _row(record: dict[str, object], trusted: frozenset[str]) -> tuple[object, ...] | None:
    """``(origin, seq, hash, prev, ok, digest, cp, cp_size, cp_head, cp_sig, cp_key)`` or ``None`` if unusable."""
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
    checkpoint: tuple[int | None, str | None, str | None, str | None] = (None, None, None, None)
    if is_cp:
        checkpoint = _checkpoint(record, trusted)
    return (origin, seq, digest, prev, int(ok), identity, int(is_cp), *checkpoint)


def _checkpoint(record: dict[str, object], trusted: frozenset[str]) -> tuple[int | None, str | None, str, str | None]:
    """``(size, head, "valid" | "unsigned" | "bad", signing key)`` of a checkpoint record."""
    attributes = record.get("attributes")
    if not isinstance(attributes, dict):
        return None, None, "bad", None
    size, head = attributes.get(CHECKPOINT_SIZE), attributes.get(CHECKPOINT_HEAD)
    signature, key = attributes.get(CHECKPOINT_SIGNATURE, ""), attributes.get(CHECKPOINT_KEY, "")
    if isinstance(size, bool) or not isinstance(size, int) or not isinstance(head, str):
        return None, None, "bad", None
    if not isinstance(signature, str) or not isinstance(key, str):
        return size, head, "bad", None
    if not signature and not key:
        return size, head, "unsigned", None
    time_ns = record.get("time")
    if not isinstance(time_ns, int) or (trusted and key.lower() not in trusted):
        return size, head, "bad", None
    payload = checkpoint_payload(str(record["origin"]), size, head, time_ns)
    if not verify_signature(key, signature, payload):
        return size, head, "bad", None
    return size, head, "valid", key.lower()


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


def _mark_cut_copies(db: sqlite3.Connection, src: int) -> None:
    """Mark (``cut=1``) each copy that is a cut of a whole copy of the same record which verifies: first
    re-home the origins seen only cut (their name cut too) to the one origin whose name they start."""
    origins = {
        str(o): bool(ok) for o, ok in db.execute("SELECT origin, max(ok) FROM r WHERE src=? GROUP BY origin", (src,))
    }
    for origin, whole in origins.items():
        if whole:
            continue
        longer = [o for o, ok in origins.items() if ok and o != origin and o.startswith(origin)]
        if len(longer) == 1:
            db.execute("UPDATE r SET origin=? WHERE src=? AND origin=?", (longer[0], src, origin))
    groups = db.execute(
        "SELECT origin, seq FROM r WHERE src=? GROUP BY origin, seq HAVING max(ok)=1 AND min(ok)=0", (src,)
    ).fetchall()
    for origin, seq in groups:
        copies = db.execute(
            "SELECT r.pos, r.ok, body.json FROM r JOIN body ON body.src=r.src AND body.pos=r.pos"
            " WHERE r.src=? AND r.origin=? AND r.seq=?",
            (src, origin, seq),
        ).fetchall()
        wholes = [json.loads(text) for _, ok, text in copies if ok]
        for pos, ok, text in copies:
            if not ok and any(_cut_of(json.loads(text), whole) for whole in wholes):
                db.execute("UPDATE r SET cut=1 WHERE src=? AND pos=?", (src, pos))


def _cut_of(copy: object, whole: object) -> bool:
    """Whether ``copy`` is ``whole`` with some strings cut, all to one length (what a span attribute
    length limit does): the same shape, numbers and booleans, every other string equal; it cannot add
    or change anything (a tampered copy is not a cut)."""
    lengths: set[int] = set()

    def same(a: object, b: object) -> bool:
        if isinstance(a, str) and isinstance(b, str):
            if a == b:
                return True
            if len(a) < len(b) and b.startswith(a):
                lengths.add(len(a))
                return True
            return False
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
        return type(a) is type(b) and a == b

    return same(copy, whole) and len(lengths) == 1 and all(len(s) <= next(iter(lengths)) for s in _strings(copy))


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _walk(db: sqlite3.Connection, ingest: _Ingest) -> Iterator[OriginReport]:
    origins = [str(r[0]) for r in db.execute("SELECT DISTINCT origin FROM r WHERE src=? ORDER BY origin", (_SOURCE,))]
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
        self.signed = 0
        self.keys: dict[str, None] = {}  # signing keys in order of first use
        self.intact = True
        self.intact_through = 0
        self.signed_through = 0

    def note(self, key: str, seq: int) -> None:
        found = self.lists[key]
        if len(found) < MAX_LOCATIONS:
            found.append(seq)


def _walk_origin(db: sqlite3.Connection, origin: str, ingest: _Ingest) -> OriginReport:
    chain = _Chain()
    trusted = bool(ingest.trusted)
    rows = db.execute(
        "SELECT seq, hash, prev, ok, digest, cp, cp_size, cp_head, cp_sig, cp_key FROM r"
        " WHERE src=? AND origin=? AND cut=0 ORDER BY seq, pos",
        (_SOURCE, origin),
    )
    group: list[tuple[Any, ...]] = []
    for row in rows:
        if group and row[0] != group[0][0]:
            _take(db, origin, chain, group, trusted=trusted)
            group = []
        group.append(row)
    if group:
        _take(db, origin, chain, group, trusted=trusted)
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
        signed_checkpoints=chain.signed,
        signing_keys=tuple(chain.keys),
        bad_signatures=tuple(chain.lists["bad_signatures"]),
        checkpoint_mismatches=tuple(chain.lists["mismatches"]),
        unanchored=unanchored,
        torn=ingest.torn.get(origin, 0),
        duplicates_cut=int(
            db.execute("SELECT count(*) FROM r WHERE src=? AND origin=? AND cut=1", (_SOURCE, origin)).fetchone()[0]
        ),
        intact_through=chain.intact_through,
        signed_through=chain.signed_through,
    )


def _take(db: sqlite3.Connection, origin: str, chain: _Chain, group: list[tuple[Any, ...]], *, trusted: bool) -> None:
    seq = int(group[0][0])
    sound = True
    if len({row[4] for row in group}) > 1:
        chain.note("conflicting", seq)
        sound = False
    else:
        chain.identical += len(group) - 1
    rep = next((row for row in group if row[3]), group[0])
    _, digest, prev, ok, _, is_cp, cp_size, cp_head, cp_sig, cp_key = rep
    chain.records += 1
    chain.first = chain.first or seq
    chain.last = seq
    if not ok:
        chain.note("modified", seq)
        sound = False
    if seq > chain.prev_seq + 1:
        if len(chain.gaps) < MAX_LOCATIONS:
            chain.gaps.append((chain.prev_seq + 1, seq - 1))
        chain.missing += seq - chain.prev_seq - 1
        sound = False
    elif (seq == 1 and prev != GENESIS) or (chain.prev_hash is not None and prev != chain.prev_hash):
        chain.note("broken_links", seq)
        sound = False
    chain.prev_seq, chain.prev_hash = seq, str(digest)
    chain.intact = chain.intact and sound
    if chain.intact:
        chain.intact_through = seq
    if is_cp:
        chain.checkpoints += 1
        if cp_sig == "bad":
            chain.note("bad_signatures", seq)
            return
        if cp_sig == "unsigned":
            chain.unsigned += 1
        else:
            chain.signed += 1
            chain.keys.setdefault(str(cp_key))
        if cp_size is None or not _head_matches(db, origin, size=int(cp_size), head=str(cp_head), seq=seq, prev=prev):
            chain.note("mismatches", seq)
            return
        if ok:
            chain.anchored = max(chain.anchored, seq)
        if trusted and cp_sig == "valid" and chain.intact:
            chain.signed_through = max(chain.signed_through, int(cp_size))


def _head_matches(db: sqlite3.Connection, origin: str, *, size: int, head: str, seq: int, prev: str) -> bool:
    if size >= seq:
        return False
    if size == seq - 1:
        return head == prev and (size > 0 or head == GENESIS)
    found = {
        str(r[0])
        for r in db.execute("SELECT hash FROM r WHERE src=? AND origin=? AND seq=? AND ok=1", (_SOURCE, origin, size))
    }
    return head in found


# -- cross-check -------------------------------------------------------------------------------


def _origins(db: sqlite3.Connection, src: int) -> dict[str, int]:
    """``origin -> distinct records`` of one side."""
    rows = db.execute("SELECT origin, count(DISTINCT seq) FROM r WHERE src=? GROUP BY origin", (src,))
    return {str(origin): int(n) for origin, n in rows}


def _cross_check(db: sqlite3.Connection, witness: str, seen: _Ingest, source: _Ingest) -> CrossCheck:
    mine, theirs = _origins(db, _SOURCE), _origins(db, _WITNESS)
    # an origin of local records only (reads, tombstones of the CLI) is expected in a journal alone
    local: dict[str, int] = {}
    for kept, here, there in ((source, mine, theirs), (seen, theirs, mine)):
        if kept.kind == "journal":
            local.update({o: n for o, n in here.items() if o not in there and o not in kept.travelling})
    common = sorted(mine.keys() & theirs.keys())
    only: dict[int, list[tuple[str, int, int]]] = {_SOURCE: [], _WITNESS: []}
    counts = {_SOURCE: 0, _WITNESS: 0}
    sides = {("journal", "otlp"): (_SOURCE, _WITNESS), ("otlp", "journal"): (_WITNESS, _SOURCE)}
    journal_side, archive_side = sides.get((source.kind, seen.kind), (None, None))
    not_yet: list[tuple[str, int, int]] = []
    not_yet_count = 0
    differing: list[tuple[str, int]] = []
    contradicted: list[tuple[str, str, int]] = []
    for origin in common:
        for side, other in ((_SOURCE, _WITNESS), (_WITNESS, _SOURCE)):
            seqs = db.execute(
                "SELECT DISTINCT seq FROM r WHERE src=? AND origin=? AND seq NOT IN"
                " (SELECT seq FROM r WHERE src=? AND origin=?) ORDER BY seq",
                (side, origin, other, origin),
            )
            archived = _archive_end(db, archive_side, origin) if side == journal_side else None
            for first, last in _runs(int(row[0]) for row in seqs):
                if archived is not None and first > archived:  # past the archive's tail: not there yet
                    not_yet_count += last - first + 1
                    if len(not_yet) < MAX_LOCATIONS:
                        not_yet.append((origin, first, last))
                    continue
                counts[side] += last - first + 1
                if len(only[side]) < MAX_LOCATIONS:
                    only[side].append((origin, first, last))
            heads = db.execute(
                "SELECT DISTINCT c.seq FROM r c WHERE c.src=? AND c.origin=? AND c.cp=1 AND c.cp_sig!='bad'"
                " AND c.cp_size>0 AND EXISTS (SELECT 1 FROM r o WHERE o.src=? AND o.origin=c.origin AND"
                " o.seq=c.cp_size) AND NOT EXISTS (SELECT 1 FROM r o WHERE o.src=? AND o.origin=c.origin"
                " AND o.seq=c.cp_size AND o.hash=c.cp_head) ORDER BY c.seq",
                (side, origin, other, other),
            )
            holder = "source" if side == _SOURCE else "witness"
            contradicted += [(holder, origin, int(row[0])) for row in heads][: MAX_LOCATIONS - len(contradicted)]
        rows = db.execute(
            "SELECT seq FROM (SELECT DISTINCT seq, digest, src FROM r WHERE src IN (0, 1) AND origin=? AND cut=0)"
            " GROUP BY seq"
            " HAVING count(DISTINCT src)=2 AND count(*)!=2*count(DISTINCT digest) ORDER BY seq",
            (origin,),
        )
        differing += [(origin, int(row[0])) for row in rows][: MAX_LOCATIONS - len(differing)]
    return CrossCheck(
        witness=witness,
        kind=seen.kind,
        records=sum(theirs.values()),
        malformed=seen.malformed,
        source_kind=source.kind,
        origins_only_in_source=tuple((o, n) for o, n in sorted(mine.items()) if o not in theirs and o not in local),
        origins_only_in_witness=tuple((o, n) for o, n in sorted(theirs.items()) if o not in mine and o not in local),
        local_origins=tuple(sorted(local.items())),
        only_in_source=tuple(only[_SOURCE]),
        only_in_source_count=counts[_SOURCE],
        only_in_witness=tuple(only[_WITNESS]),
        only_in_witness_count=counts[_WITNESS],
        differing=tuple(differing),
        contradicted_heads=tuple(contradicted),
        not_yet_archived=tuple(not_yet),
        not_yet_archived_count=not_yet_count,
    )


def _archive_end(db: sqlite3.Connection, side: int | None, origin: str) -> int | None:
    """The last seq of ``origin`` the archive (``side``) holds."""
    if side is None:
        return None
    row = db.execute("SELECT max(seq) FROM r WHERE src=? AND origin=?", (side, origin)).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def _runs(seqs: Iterable[int]) -> Iterator[tuple[int, int]]:
    """Consecutive runs of ascending ``seqs`` as ``(first, last)``."""
    first = last = None
    for seq in seqs:
        if last is not None and seq == last + 1:
            last = seq
            continue
        if first is not None and last is not None:
            yield first, last
        first = last = seq
    if first is not None and last is not None:
        yield first, last
