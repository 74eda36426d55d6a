"""``check_bundle``: verify an evidence bundle (``_bundle``) with nothing but the file and the public key.

The steps (docs/evidence-bundles.md, "Verification"):

1. per origin, the checkpoint note is signed by the key (C2SP signed note, Ed25519, key name = the note's
   origin line), its origin line is the origin's, its size the one the bundle states;
2. each record's hash recomputes from its canonical body (``SHA-256(prev || body)``), its body names the
   origin and seq it is listed under, the records of an origin are in increasing seq order, and its
   inclusion proof leads from ``leaf_hash(hash)`` at index ``seq - 1`` to the note's root;
3. each record is a capture, erasure or read record of the bundle's execution and tenant;
4. every part a capture kept in the store is accounted for exactly once: ``ok`` with a text whose size
   and digest (SHA-256, or HMAC-SHA256 under the bundle's ``digest_key``) are the record's, ``erased``
   with a tombstone (an erasure record of the bundle written at or after the capture); ``missing`` or
   ``digest-mismatch`` parts are lost evidence;
5. each read record of a part names a part of a capture the bundle holds (a capture record taken out
   of the bundle shows there).

Records listed as ``unanchored`` (after their origin's last checkpoint) are checked for their hash and
execution but proven by nothing: the bundle fails. What a bundle cannot show: that no record of the
execution was left out entirely (with its parts, tombstones and reads); the origin's full log, or a
witness's archive, can.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from loom_otel.audit._bundle import BUNDLE_FORMAT, BUNDLE_VERSION, EVIDENCE_TYPES
from loom_otel.core.journal import (
    CheckpointNote,
    NoteError,
    ProofError,
    chain_hash,
    leaf_hash,
    log_origin,
    text_bytes,
    verify_inclusion,
    verify_note,
)
from loom_otel.core.journal import attributes as attr

__all__ = ["BundleReport", "check_bundle"]

_HEX64: Final = frozenset("0123456789abcdef")


@dataclass(slots=True)
class BundleReport:
    """What ``check_bundle`` found; ``ok`` only with records and no problem."""

    execution_id: str = ""
    tenant: str | None = None
    origins: int = 0
    records: int = 0
    texts: int = 0
    erased: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.records > 0 and not self.problems


def _is_hash(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX64


class _Check:
    def __init__(self, bundle: Mapping[str, Any], public_raw: bytes) -> None:
        self.bundle = bundle
        self.key = public_raw
        self.report = BundleReport()
        self.records: dict[tuple[str, int], dict[str, Any]] = {}

    def fail(self, problem: str) -> None:
        self.report.problems.append(problem)

    def run(self) -> BundleReport:
        bundle, report = self.bundle, self.report
        if bundle.get("format") != BUNDLE_FORMAT or bundle.get("version") != BUNDLE_VERSION:
            self.fail(f"not a version {BUNDLE_VERSION} {BUNDLE_FORMAT} file")
            return report
        report.execution_id = str(bundle.get("execution_id"))
        tenant = bundle.get("tenant")
        report.tenant = None if tenant is None else str(tenant)
        for entry in _list(bundle.get("origins")):
            self.origin(entry)
        for entry in _list(bundle.get("unanchored")):
            where = f"origin {entry.get('origin')} seq {entry.get('seq')}"
            if self.record(str(entry.get("origin")), entry, where) is not None:
                self.fail(f"{where}: unproven (after the origin's last checkpoint)")
        self.parts()
        self.reads()
        return report

    def origin(self, entry: Mapping[str, Any]) -> None:
        origin = str(entry.get("origin"))
        found = entry.get("checkpoint")
        checkpoint: Mapping[str, Any] = found if isinstance(found, dict) else {}
        size = checkpoint.get("size")
        self.report.origins += 1
        note: CheckpointNote | None = None
        try:
            note = verify_note(str(checkpoint.get("note")), self.key)
        except (NoteError, ValueError) as exc:
            self.fail(f"origin {origin}: its checkpoint note is not signed by the given key ({exc})")
        if note is not None and (note.origin_line != log_origin(origin) or note.size != size):
            self.fail(f"origin {origin}: the signed note is of {note.origin_line} size {note.size}, not of this origin")
            note = None
        last = 0
        for record in _list(entry.get("records")):
            seq = record.get("seq")
            where = f"origin {origin} seq {seq}"
            body = self.record(origin, record, where)
            if body is None or not isinstance(seq, int):
                continue
            if seq <= last:
                self.fail(f"{where}: reordered (after seq {last})")
            last = max(last, seq)
            if note is None:
                continue  # nothing signed to prove it against: the origin's failure says so
            proof = record.get("proof")
            try:
                if not isinstance(proof, list) or not all(_is_hash(h) for h in proof):
                    raise ProofError("the proof is not a list of hashes")
                leaf = leaf_hash(bytes.fromhex(str(record["hash"])))
                verify_inclusion(seq - 1, note.size, leaf, [bytes.fromhex(h) for h in proof], note.root)
            except ProofError as exc:
                self.fail(f"{where}: its inclusion proof does not lead to the signed root ({exc})")

    def record(self, origin: str, entry: Mapping[str, Any], where: str) -> dict[str, Any] | None:
        """The record's body once its hash recomputes and it is the bundle's execution's; else ``None``."""
        digest, text = entry.get("hash"), entry.get("body")
        try:
            body = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            body = None
        if (
            not isinstance(text, str)
            or not isinstance(body, dict)
            or not _is_hash(digest)
            or not _is_hash(body.get("prev"))
        ):
            self.fail(f"{where}: not a journal record")
            return None
        if chain_hash(str(body["prev"]), text_bytes(text)) != digest:
            self.fail(f"{where}: modified (its hash does not recompute from its content)")
            return None
        if body.get("origin") != origin or body.get("seq") != entry.get("seq"):
            self.fail(f"{where}: its content is origin {body.get('origin')} seq {body.get('seq')}: moved")
            return None
        found = body.get("attributes")
        attributes: Mapping[str, Any] = found if isinstance(found, dict) else {}
        execution, tenant = attributes.get(attr.EXECUTION_ID), attributes.get(attr.TENANT)
        if body.get("type") not in EVIDENCE_TYPES:
            self.fail(f"{where}: a {body.get('type')} record is no evidence of an execution")
            return None
        if execution != self.report.execution_id or tenant != self.report.tenant:
            self.fail(f"{where}: a record of another execution ({execution!r}, tenant {tenant!r})")
            return None
        key = (origin, int(body["seq"]))
        if key in self.records:
            self.fail(f"{where}: listed twice")
        self.records[key] = body
        self.report.records += 1
        return body

    def parts(self) -> None:
        kept: dict[tuple[str, int, int], tuple[str, int, int]] = {}  # (origin, seq, part) -> digest, size, time
        for (origin, seq), body in self.records.items():
            if body.get("type") != attr.RECORD_CAPTURE:
                continue
            attributes = body["attributes"]
            refs, digests, sizes = (
                _list_of(attributes.get(k)) for k in (attr.PART_REF, attr.PART_DIGEST, attr.PART_SIZE)
            )
            for index, ref in enumerate(refs):
                if ref and index < len(digests) and index < len(sizes):
                    kept[(origin, seq, index)] = (str(digests[index]), int(sizes[index]), int(body.get("time") or 0))
        key_hex = self.bundle.get("digest_key")
        secret = bytes.fromhex(key_hex) if isinstance(key_hex, str) else None
        seen: set[tuple[str, int, int]] = set()
        for entry in _list(self.bundle.get("parts")):
            place = (str(entry.get("origin")), _int(entry.get("seq")), _int(entry.get("part")))
            where = f"origin {place[0]} seq {place[1]} part {place[2]}"
            if place not in kept:
                self.fail(f"{where}: a part of no capture record in the bundle (record removed?)")
                continue
            if place in seen:
                self.fail(f"{where}: listed twice")
            seen.add(place)
            self.part(entry, where, kept[place], secret)
        for place in sorted(kept.keys() - seen):
            self.fail(f"origin {place[0]} seq {place[1]} part {place[2]}: not in the bundle (no text, no tombstone)")

    def part(self, entry: Mapping[str, Any], where: str, recorded: tuple[str, int, int], secret: bytes | None) -> None:
        digest, size, captured = recorded
        status = entry.get("status")
        if status == "ok":
            text = entry.get("text")
            body = text_bytes(text) if isinstance(text, str) else b""
            ours = hashlib.sha256(body).hexdigest()
            keyed = hmac.new(secret, body, hashlib.sha256).hexdigest() if secret is not None else ""
            if not isinstance(text, str) or len(body) != size or digest not in (ours, keyed):
                self.fail(f"{where}: its text is not the one the record's digest names (changed)")
            else:
                self.report.texts += 1
        elif status == "erased":
            tombstone = entry.get("tombstone")
            at = (
                (str(tombstone[0]), _int(tombstone[1])) if isinstance(tombstone, list) and len(tombstone) == 2 else None
            )
            record = self.records.get(at) if at is not None else None
            if record is None or record.get("type") != attr.RECORD_ERASURE or int(record.get("time") or 0) < captured:
                self.fail(f"{where}: erased, but its tombstone is not in the bundle")
            else:
                self.report.erased += 1
        else:
            self.fail(f"{where}: {status} (lost evidence: no text and no tombstone)")

    def reads(self) -> None:
        refs = {
            str(ref)
            for body in self.records.values()
            if body.get("type") == attr.RECORD_CAPTURE
            for ref in _list_of(body["attributes"].get(attr.PART_REF))
            if ref
        }
        for (origin, seq), body in sorted(self.records.items()):
            ref = body["attributes"].get(attr.READ_REF) if body.get("type") == attr.RECORD_READ else None
            if ref and ref not in refs:
                self.fail(f"origin {origin} seq {seq}: a read of a part whose capture record is not in the bundle")


def _list(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _list_of(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def check_bundle(bundle: object, public_raw: bytes) -> BundleReport:
    """Verify a parsed bundle against the checkpoint key (raw Ed25519 public key)."""
    if not isinstance(bundle, dict):
        report = BundleReport()
        report.problems.append("not a bundle (a JSON object)")
        return report
    return _Check(bundle, public_raw).run()
