"""The journal, public face for the parts that read what core wrote (audit, the chained exporter, the viewer,
the CLI): its records and their hash chain, the reader of its segments, the writer's handle, the signed
checkpoints with their Merkle proofs, and ``attributes`` (the event names and attribute keys records share
with the spans)."""

from __future__ import annotations

from loom_otel.core._evidence import _attributes as attributes
from loom_otel.core._evidence._attributes import AttributeValue
from loom_otel.core._evidence._canonical import GENESIS, canonical_json, chain_hash, sha256_hex, text_bytes, text_of
from loom_otel.core._evidence._journal._checkpoint import (
    CHECKPOINT_HEAD,
    CHECKPOINT_KEY,
    CHECKPOINT_SIGNATURE,
    CHECKPOINT_SIZE,
    checkpoint_payload,
    generate_key,
    load_public_key,
    verify_signature,
)
from loom_otel.core._evidence._journal._merkle import (
    MerkleTree,
    ProofError,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)
from loom_otel.core._evidence._journal._note import (
    CHECKPOINT_NOTE,
    CheckpointNote,
    NoteError,
    log_origin,
    parse_note,
    verify_note,
)
from loom_otel.core._evidence._journal._reader import (
    MAX_LINE_BYTES,
    Position,
    all_segments,
    iter_records,
    list_origins,
    origin_is_live,
    read_lines,
    segments,
)
from loom_otel.core._evidence._journal._records import RECORD_SPAN, event_for_record, record_from_event
from loom_otel.core._evidence._journal._writer import (
    Journal,
    JournalEntry,
    local_journals,
    local_origins,
    open_journal,
    record_body,
)

__all__ = [
    "AttributeValue",
    "CHECKPOINT_HEAD",
    "CHECKPOINT_KEY",
    "CHECKPOINT_NOTE",
    "CHECKPOINT_SIGNATURE",
    "CHECKPOINT_SIZE",
    "CheckpointNote",
    "GENESIS",
    "Journal",
    "JournalEntry",
    "MAX_LINE_BYTES",
    "MerkleTree",
    "NoteError",
    "Position",
    "ProofError",
    "RECORD_SPAN",
    "all_segments",
    "attributes",
    "canonical_json",
    "chain_hash",
    "checkpoint_payload",
    "event_for_record",
    "generate_key",
    "iter_records",
    "leaf_hash",
    "list_origins",
    "load_public_key",
    "local_journals",
    "local_origins",
    "log_origin",
    "open_journal",
    "origin_is_live",
    "parse_note",
    "read_lines",
    "record_body",
    "record_from_event",
    "segments",
    "sha256_hex",
    "text_bytes",
    "text_of",
    "verify_consistency",
    "verify_inclusion",
    "verify_note",
    "verify_signature",
]
