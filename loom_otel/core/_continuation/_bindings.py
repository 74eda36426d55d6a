"""Binding records: for every reasoning block loom-otel saw produced, the digest of what the vendor
bound it to, keyed by the SHA-256 of its signature (never the signature itself).

Records live in process memory and, durably, in append-only JSON lines beside the audit journal
(``<journal>.bindings/<writer>.jsonl``) so that a restarted process continues the same execution.
A file holds digests, refs and model names only: no readable text, no signature. The signatures
needed to put back a stripped tool round are kept in memory only (this process's own rounds).

A record is in memory at once (the next request of this process finds it). Its line is written to the
file as the journal writes its records: under ``batch`` (``deferred``), by the journal's group commit
(``_durability``), not on the model call's path; under ``os``, before the call returns; under ``always``,
written and synced before the call returns. A line lost in a crash only makes its block unknown to a
restarted process, which then sends it as the application holds it.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import uuid
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Final, NamedTuple, TypeVar

from loom_otel.core._evidence import _durability
from loom_otel.core._evidence._io_error import failure_detail
from loom_otel.core._runtime._callbacks import logger
from loom_otel.core._runtime._fork import renew_after_fork, renew_module_after_fork

__all__ = ["BlockRecord", "Bindings", "RoundBlock", "RoundRecord", "bindings_for", "forget_bindings"]

_VERSION: Final = 1
KEPT: Final = 200_000
"""Records kept in memory (about 80 MB at most): a block older than the newest ``KEPT`` is unknown to
this process, and an unknown block is sent as the application holds it (never dropped)."""
_PENDING_LINES: Final = 256
"""Deferred lines kept unwritten at most: past them the call that adds one writes them all (a group
commit that fell behind)."""
_write = os.write
"""How a line reaches the file (a module seam: tests hold a write to show nobody waits on it)."""
_K = TypeVar("_K")
_V = TypeVar("_V")


def _string(value: str | None) -> str:
    """A JSON string (ASCII, as ``json.dumps`` writes it) or ``null``."""
    return "null" if value is None else encode_basestring_ascii(value)


class BlockRecord(NamedTuple):
    """One produced block: its binding and where its readable text lives (if it was kept).

    A tuple of plain values: ``Bindings`` keeps each as an exact tuple, which the garbage collector
    stops tracking (up to ``KEPT`` of them would otherwise be walked by every full collection)."""

    binding: bytes
    provider: str
    model: str | None
    system: bytes
    tools: bytes
    text_digest: str | None
    """SHA-256 hex of the readable text; ``None`` when there is none (omitted display, redacted)."""
    ref: str | None
    split: tuple[int, ...] = ()
    """Where a block spread over several vendor parts held its text: each part's length in characters
    (Gemini streams one thought part per chunk); ``()`` for a block that is one part."""
    execution: str | None = None
    """The execution that produced the block (a request holding it joins it); ``None`` in older files."""
    tenant: str | None = None
    principal: str | None = None
    """The principal the producing call named, if any: a call naming another never reads the block."""
    named: bool = True
    """The execution was named by ``execution()``: only this process (``local``) joins it from a request
    with no scope (a call that lost its context), never another process reading the file; ``True`` in
    older files."""
    local: bool = False
    """Recorded by this process (never written: a record read from a file is not)."""
    history: bytes = b""
    """The digest of the conversation before the block as the application held it (its messages, no
    system, tools or model): a request that carries the block in that same conversation joins its
    execution even where a changed system prompt or tool list unbinds it. ``b""`` in older files."""

    def to_json(self, key: bytes) -> str:
        """One line of the binding file: the JSON object ``from_json`` reads, formatted directly (the
        strings through the JSON encoder's own string escaping, the bytes as hex)."""
        split = f',"x":[{",".join(map(str, self.split))}]' if self.split else ""
        owner = "" if self.execution is None else f',"e":{_string(self.execution)}'
        owner += "" if self.tenant is None else f',"n":{_string(self.tenant)}'
        owner += "" if self.principal is None else f',"w":{_string(self.principal)}'
        owner += "" if self.named else ',"a":1'
        owner += f',"h":"{self.history.hex()}"' if self.history else ""
        return (
            f'{{"v":{_VERSION},"k":"{key.hex()}","b":"{self.binding.hex()}","p":{_string(self.provider)},'
            f'"m":{_string(self.model)},"s":"{self.system.hex()}","t":"{self.tools.hex()}",'
            f'"d":{_string(self.text_digest)},"r":{_string(self.ref)}{split}{owner}}}'
        )

    @classmethod
    def from_json(cls, line: str) -> tuple[bytes, BlockRecord] | None:
        try:
            raw = json.loads(line)
            if raw.get("v") != _VERSION:
                return None
            record = cls(
                bytes.fromhex(raw["b"]),
                str(raw["p"]),
                raw.get("m"),
                bytes.fromhex(raw["s"]),
                bytes.fromhex(raw["t"]),
                raw.get("d"),
                raw.get("r"),
                tuple(int(n) for n in raw.get("x") or ()),
                _text_or_none(raw.get("e")),
                _text_or_none(raw.get("n")),
                _text_or_none(raw.get("w")),
                raw.get("a") != 1,
                False,
                bytes.fromhex(raw.get("h") or ""),
            )
            return bytes.fromhex(raw["k"]), record
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class RoundBlock:
    """A reasoning block of a produced tool round: where it sat, and what is needed to put it back."""

    position: int
    kind: str
    key: bytes
    canon: bytes
    signature: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """A produced assistant turn that called tools: enough to put its stripped reasoning back."""

    prefix: bytes
    """The digest of everything before the turn, as it was sent."""
    rest: bytes
    """The digest of the turn's other blocks, in order."""
    blocks: tuple[RoundBlock, ...]
    calls: bytes = b""
    """The digest of the turn's tool calls (its last plain blocks, one per call id, in order): inside the
    execution that produced the turn, a turn that still carries them gets its leading reasoning back even
    when a framework dropped or rewrote its other blocks (``Continuation._restore``)."""


class Bindings:
    """The records of one journal directory, shared by every instrumentor of the process."""

    def __init__(self, directory: Path | None, *, fsync: bool = False, deferred: bool = False) -> None:
        self.directory = directory
        self.fsync = fsync
        """Sync each line before ``add`` returns (journal durability ``always``)."""
        self.deferred = deferred and not fsync
        """Leave the lines to ``sync_pending`` (the journal's group commit, durability ``batch``)."""
        self._blocks: dict[bytes, tuple[object, ...]] = {}
        """Each record as an exact tuple of its fields (untracked by the garbage collector)."""
        self._rounds: dict[str, RoundRecord] = {}
        self._lock = threading.Lock()
        """Held for the records in memory only (never across a system call)."""
        self._write_lock = threading.Lock()
        """Held while lines are written to the file (and, under ``always``, synced)."""
        self._loaded = directory is None
        self._fd = -1
        self._pending: list[tuple[bytes, tuple[object, ...]]] = []
        """Records whose lines are not written yet, as kept in ``_blocks`` (``sync_pending`` formats and
        writes them)."""
        renew_after_fork(self, Bindings._after_fork_in_child)

    def block(self, key: bytes) -> BlockRecord | None:
        if not self._loaded:
            self._load()
        found = self._blocks.get(key)
        return None if found is None else BlockRecord._make(found)

    def round(self, call_id: str) -> RoundRecord | None:
        return self._rounds.get(call_id)

    def add(self, records: list[tuple[bytes, BlockRecord]], rounds: list[tuple[str, RoundRecord]]) -> None:
        """Remember produced blocks (and tool rounds, in memory); append the blocks durably."""
        if not self._loaded:
            self._load()
        with self._lock:
            fresh = [(k, r) for k, r in records if self._blocks.get(k) != r]
            kept = [(key, tuple(record)) for key, record in fresh]
            for key, fields in kept:
                self._blocks.pop(key, None)  # re-inserted: the dict's order is the order of recording
                self._blocks[key] = fields
            for call_id, round_ in rounds:
                self._rounds.pop(call_id, None)
                self._rounds[call_id] = round_
            _forget_oldest(self._blocks, KEPT)
            _forget_oldest(self._rounds, KEPT)
            if not fresh or self.directory is None:
                return
            self._pending += kept
            now = not self.deferred or len(self._pending) >= _PENDING_LINES
            if not now:
                _durability.pending(self)
        if now:
            self._write_pending()

    def sync_pending(self) -> None:
        """Write the lines not written yet (``_durability``: the journal's group commit, ``force_flush``,
        ``close``). Never raises: a line that cannot be written is logged and dropped (its block is then
        unknown to a restarted process, which sends it as the application holds it)."""
        if not self._pending:
            return
        try:
            self._write_pending()
        except OSError as exc:
            logger.warning(
                "loom-otel: binding records not written (%s): a restarted process will not know these "
                "reasoning blocks and sends them as the application holds them; captured evidence "
                "(store, journal) is not affected",
                failure_detail(exc, self.directory),
            )

    def _write_pending(self) -> None:
        """Append the pending lines (and sync them under ``always``). The records' lock is held only to
        take them: the lines are formatted and written under the file's own lock, so a call recording
        blocks never waits on a write (a group commit's, or another call's). Whoever takes the file's
        lock finds every line taken before it written: a caller returns once its own line is."""
        with self._write_lock:
            with self._lock:
                pending, self._pending = self._pending, []
            if not pending:
                return
            data = "".join([BlockRecord._make(fields).to_json(key) + "\n" for key, fields in pending]).encode()
            directory = self.directory
            assert directory is not None
            if self._fd < 0:
                directory.mkdir(parents=True, exist_ok=True)
                path = directory / f"{os.getpid()}-{uuid.uuid4().hex[:12]}.jsonl"
                self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            view = memoryview(data)
            while view:
                view = view[_write(self._fd, view) :]
            if self.fsync:
                os.fsync(self._fd)

    def close(self) -> None:
        self.sync_pending()
        with self._write_lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def _after_fork_in_child(self) -> None:
        """The parent writes the lines it had pending; the child writes its own to a file of its own."""
        self._pending = []
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _load(self) -> None:
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
            directory = self.directory
            if directory is None or not directory.is_dir():
                return
            for path in sorted(directory.glob("*.jsonl"), key=_modified):  # oldest first: the newest are kept
                try:
                    lines = path.read_text().splitlines()
                except OSError as exc:
                    logger.warning("loom-otel: binding file unreadable (%s)", type(exc).__name__)
                    continue
                for line in lines:
                    parsed = BlockRecord.from_json(line)
                    if parsed is not None:
                        self._blocks.setdefault(parsed[0], tuple(parsed[1]))
            _forget_oldest(self._blocks, KEPT)


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _forget_oldest(records: dict[_K, _V], kept: int) -> None:
    """Keep the ``kept`` newest entries (a dict iterates oldest first)."""
    excess = len(records) - kept
    if excess > 0:
        for key in list(itertools.islice(records, excess)):
            del records[key]


_registry: dict[Path, Bindings] = {}
_registry_lock = threading.Lock()
renew_module_after_fork(__name__)


def bindings_for(journal_dir: Path, *, durability: str = "os") -> Bindings:
    """The process's records for one journal directory (kept in ``<journal>.bindings``), written as
    the journal's ``durability`` writes its records (the first caller's, for the process)."""
    directory = journal_dir.with_name(journal_dir.name + ".bindings")
    with _registry_lock:
        found = _registry.get(directory)
        if found is None:
            found = _registry[directory] = Bindings(
                directory, fsync=durability == "always", deferred=durability == "batch"
            )
        return found


def forget_bindings() -> None:
    """Drop every in-memory record (tests; the durable files stay)."""
    with _registry_lock:
        for bindings in _registry.values():
            bindings.close()
        _registry.clear()
