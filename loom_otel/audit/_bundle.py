"""``export_bundle``: one execution's evidence as one JSON file a third party checks offline
(``_bundle_check``; the format is docs/evidence-bundles.md).

From journal directories (the captures' and, for read records, the viewer's) it takes the execution's
``capture``, ``erasure`` and ``read`` records of the tenant, whole; for each origin holding one, the
origin's last checkpoint that carries a tree note (``core/_evidence/_journal/_note``), and per record an
inclusion proof against that checkpoint's root (``core/_evidence/_journal/_merkle``). Nothing of another
execution is copied: the proofs are hashes of tree nodes, and the note holds the origin, a size and a
root. A record after the last checkpoint cannot be proven: ``export_bundle`` refuses it
(``UnanchoredError``) unless ``allow_unanchored``, when the record goes into the bundle's
``unanchored`` list (which ``verify --bundle`` reports as unproven, a failure).

Texts come from the store, each part's status decided as ``read_reasoning`` decides it (``ok`` with its
text, ``erased`` with the tombstone record that accounts for it, ``missing``, ``digest-mismatch``). The
CLI's export is an operator's with store access: every record and text of the execution. The viewer's
Download link admits only the records its reader may read (``admit``), and records each text it hands
over as a read (``record_reads``) before the bundle leaves. In ``hmac-sha256`` digest mode the bundle carries the
execution's digest key (it confirms only this execution's texts, which it holds), so its digests check.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from loom_otel.audit._captures import CaptureRecord, from_attributes
from loom_otel.audit._read import PartReading, PartResolver, PartStatus
from loom_otel.core.journal import (
    CHECKPOINT_NOTE,
    MerkleTree,
    NoteError,
    chain_hash,
    leaf_hash,
    list_origins,
    parse_note,
    read_lines,
    record_body,
)
from loom_otel.core.journal import attributes as attr
from loom_otel.core.stores import DigestKeyStore, ReasoningStore

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "EVIDENCE_TYPES",
    "BundleError",
    "NoRecordError",
    "UnanchoredError",
    "export_bundle",
    "write_bundle",
]

BUNDLE_FORMAT: Final = "loom-otel/evidence-bundle"
BUNDLE_VERSION: Final = 1
EVIDENCE_TYPES: Final = frozenset({attr.RECORD_CAPTURE, attr.RECORD_ERASURE, attr.RECORD_READ})
"""The record types a bundle holds of its execution."""


class BundleError(ValueError):
    """The journal cannot give a bundle (no record of the execution, a chain that is not whole)."""


class NoRecordError(BundleError):
    """The journals hold no record of the execution (under that tenant)."""


class UnanchoredError(BundleError):
    """Records of the execution come after their origin's last signed checkpoint."""

    def __init__(self, records: Sequence[tuple[str, int]]) -> None:
        self.records = tuple(records)
        shown = ", ".join(f"{origin} seq {seq}" for origin, seq in self.records[:5])
        more = ", ..." if len(self.records) > 5 else ""
        super().__init__(
            f"{len(self.records)} record(s) of the execution are after their origin's last checkpoint and cannot be "
            f"proven ({shown}{more}): wait for the next checkpoint, or pass --allow-unanchored"
        )


_Admit = Callable[[dict[str, object]], bool] | None


@dataclass(slots=True)
class _Origin:
    origin: str
    leaves: list[bytes]
    selected: list[dict[str, object]]
    checkpoint: tuple[int, str] | None = None
    """``(size, note)`` of the origin's last checkpoint carrying a tree note."""


def _belongs(record: dict[str, object], execution_id: str, tenant: str | None) -> bool:
    attributes = record.get("attributes")
    if record.get("type") not in EVIDENCE_TYPES or not isinstance(attributes, dict):
        return False
    return attributes.get(attr.EXECUTION_ID) == execution_id and attributes.get(attr.TENANT) == tenant


def _read_origin(directory: Path, origin: str, execution_id: str, tenant: str | None, admit: _Admit) -> _Origin:
    found = _Origin(origin, [], [])
    for line in read_lines(directory / origin):
        if line.torn:
            break  # a crash's torn tail: nothing after it is in the chain
        try:
            record = json.loads(line.data) if not line.too_long else None
        except ValueError:
            record = None
        seq = len(found.leaves) + 1
        if not isinstance(record, dict) or record.get("seq") != seq or not isinstance(record.get("hash"), str):
            raise BundleError(f"origin {origin} is not whole at seq {seq} (run `loom-otel verify`)")
        digest = str(record["hash"])
        if chain_hash(str(record.get("prev")), record_body(record)) != digest:
            raise BundleError(f"origin {origin}: record seq {seq} does not hash to its hash (run `loom-otel verify`)")
        found.leaves.append(leaf_hash(bytes.fromhex(digest)))
        attributes = record.get("attributes")
        if record.get("type") == attr.RECORD_CHECKPOINT and isinstance(attributes, dict):
            note = attributes.get(CHECKPOINT_NOTE)
            if isinstance(note, str):
                found.checkpoint = (seq - 1, note)
        elif _belongs(record, execution_id, tenant) and (admit is None or admit(record)):
            found.selected.append(record)
    return found


def _capture(record: dict[str, object]) -> CaptureRecord | None:
    attributes = record.get("attributes")
    if record.get("type") != attr.RECORD_CAPTURE or not isinstance(attributes, dict):
        return None
    return from_attributes(attributes, origin=str(record["origin"]), seq=int(str(record["seq"])), time=_time(record))


def _time(record: dict[str, object]) -> int:
    value = record.get("time")
    return value if isinstance(value, int) else 0


def _entry(record: dict[str, object]) -> dict[str, object]:
    return {"seq": record["seq"], "hash": record["hash"], "body": record_body(record).decode("utf-8", "surrogatepass")}


def _parts(
    records: Iterable[dict[str, object]],
    store: ReasoningStore,
    execution_id: str,
    tenant: str | None,
    record_reads: Callable[[list[PartReading]], None] | None,
) -> list[dict[str, object]]:
    """One entry per part a capture kept in the store: its status, and its text or its tombstone."""
    records = list(records)
    tombstones = sorted(
        (_time(r), str(r["origin"]), int(str(r["seq"]))) for r in records if r.get("type") == attr.RECORD_ERASURE
    )
    resolver = PartResolver(store, tenant, execution_id)
    parts: list[dict[str, object]] = []
    read: list[PartReading] = []
    for record in records:
        capture = _capture(record)
        if capture is None:
            continue
        for index, ref in enumerate(capture.refs):
            if not ref:
                continue  # nothing was kept: the record alone says what the part was
            where: dict[str, object] = {"origin": capture.origin, "seq": capture.seq, "part": index}
            reading = resolver.resolve(capture, index, received=True)
            read.append(reading)
            entry: dict[str, object] = {**where, "status": str(reading.status)}
            if reading.status is PartStatus.OK and reading.text is not None:
                entry["text"] = reading.text.text
            elif reading.status is PartStatus.MISSING:
                covering = next((t for t in tombstones if t[0] >= capture.time), None)
                if covering is not None:
                    entry = {**where, "status": str(PartStatus.ERASED), "tombstone": list(covering[1:])}
            parts.append(entry)
    if record_reads is not None:
        record_reads(read)  # evidence of the reading before the texts leave
    return parts


def export_bundle(
    journals: Sequence[str | os.PathLike[str]],
    store: ReasoningStore,
    execution_id: str,
    tenant: str | None = None,
    *,
    allow_unanchored: bool = False,
    admit: Callable[[dict[str, object]], bool] | None = None,
    record_reads: Callable[[list[PartReading]], None] | None = None,
    exported_by: str = "",
) -> dict[str, object]:
    """The evidence bundle of (``tenant``, ``execution_id``) from ``journals`` and ``store``.

    ``admit``: which of the execution's records the exporter may have (``None``: all); ``record_reads``
    is given the parts read from the store before the bundle is returned. ``NoRecordError`` when the
    journals hold no record of the execution, ``BundleError`` when an origin holding one is not whole,
    ``UnanchoredError`` for records past the last checkpoint unless ``allow_unanchored``."""
    origins: list[_Origin] = []
    for root in dict.fromkeys(Path(d).expanduser().absolute() for d in journals):  # each directory once
        origins += [
            o for o in (_read_origin(root, n, execution_id, tenant, admit) for n in list_origins(root)) if o.selected
        ]
    if not origins:
        raise NoRecordError(f"no record of execution {execution_id!r} (tenant {tenant!r}) in the journal")
    proven: list[dict[str, object]] = []
    unanchored: list[dict[str, object]] = []
    for origin in origins:
        size = 0 if origin.checkpoint is None else origin.checkpoint[0]
        late = [r for r in origin.selected if int(str(r["seq"])) > size]
        unanchored += [{"origin": origin.origin, **_entry(r)} for r in late]
        if origin.checkpoint is None or len(late) == len(origin.selected):
            continue
        note = origin.checkpoint[1]
        tree = MerkleTree(origin.leaves[:size])
        try:
            signed_root = parse_note(note).root
        except NoteError as exc:
            raise BundleError(f"origin {origin.origin}: its checkpoint note is malformed ({exc})") from None
        if signed_root != tree.root():
            raise BundleError(f"origin {origin.origin}: the journal does not hash to its checkpoint's root")
        records = []
        for record in origin.selected:
            seq = int(str(record["seq"]))
            if seq <= size:
                records.append({**_entry(record), "proof": [h.hex() for h in tree.inclusion_proof(seq - 1)]})
        proven.append({"origin": origin.origin, "checkpoint": {"size": size, "note": note}, "records": records})
    if unanchored and not allow_unanchored:
        raise UnanchoredError([(str(r["origin"]), int(str(r["seq"]))) for r in unanchored])
    selected = [r for o in origins for r in o.selected]
    bundle: dict[str, object] = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "execution_id": execution_id,
        "tenant": tenant,
        "exported": {"time": time.time_ns(), "by": exported_by},
        "origins": proven,
        "unanchored": unanchored,
        "parts": _parts(selected, store, execution_id, tenant, record_reads),
    }
    key = store.digest_key(tenant, execution_id) if isinstance(store, DigestKeyStore) else None
    if key is not None:
        bundle["digest_key"] = key.hex()
    return bundle


def write_bundle(bundle: dict[str, object], path: str | os.PathLike[str]) -> None:
    """Write ``bundle`` to ``path`` (a new file, or replacing one), whole or not at all, readable by its
    owner only (mode 0600: it holds reasoning texts)."""
    target = Path(path)
    partial = target.with_name(f".{target.name}.partial")
    data = (json.dumps(bundle, indent=1, ensure_ascii=True) + "\n").encode("ascii")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # a partial file left by an earlier run keeps no wider mode
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(partial, target)
