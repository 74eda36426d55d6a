"""The execution page's "Download evidence": the evidence bundle (``audit/_bundle``) of what its reader may
read, itself a recorded read.

It holds the captures the reader may read (``may_read`` on what the record says, then on the audience sealed
with each blob it names: a record never widens who may read a blob), the execution's tombstones, and the reader's
own read records; its texts are read records, written before the bundle leaves. The viewer's own reads
journal is checkpointed first, so the reader's earlier reads are proven; records other writers have not
yet checkpointed go in as unproven (``verify --bundle`` names them). A reader who may read none of the
execution gets the same 404 as the page; an archive (no origin logs to prove from) offers no bundle.
"""

from __future__ import annotations

from loom_otel.audit._bundle import NoRecordError, export_bundle
from loom_otel.audit._captures import from_attributes
from loom_otel.audit._read import PartReading, PartResolver
from loom_otel.core.journal import attributes as attr
from loom_otel.core.policy import Audience, ReadingPolicy, may_read
from loom_otel.core.stores import ReasoningStore
from loom_otel.viewer._reading import Evidence
from loom_otel.viewer._reads import ReadLog

__all__ = ["evidence_bundle"]


def evidence_bundle(  # noqa: PLR0917 - the viewer's state and the request's
    evidence: Evidence,
    reads: ReadLog,
    store: ReasoningStore,
    policy: ReadingPolicy,
    reader: str,
    execution_id: str,
    tenant: str | None,
) -> dict[str, object] | None:
    """The bundle of (``tenant``, ``execution_id``) for ``reader``; ``None`` when there is none to give."""
    if evidence.remote is not None or not evidence.source.is_dir():
        return None
    readable = False
    sealed = PartResolver(
        store,
        tenant,
        execution_id,
        None,
        admits=lambda principal, owner: may_read(reader, Audience(tenant, principal, owner), policy),
    )

    def admit(record: dict[str, object]) -> bool:
        nonlocal readable
        attributes = record.get("attributes")
        if not isinstance(attributes, dict):
            return False
        if record.get("type") == attr.RECORD_READ:
            return attributes.get(attr.READ_READER) == reader
        if record.get("type") != attr.RECORD_CAPTURE:
            return True
        capture = from_attributes(attributes, origin="", seq=0, time=0)
        allowed = (
            capture is not None
            and may_read(reader, Audience(capture.tenant, capture.principal, capture.owner), policy)
            and sealed.admitted(capture)  # the blobs' sealed audience decides, never the record
        )
        readable = readable or allowed
        return allowed

    def record_reads(parts: list[PartReading]) -> None:
        if readable:
            reads.parts(reader, tenant, execution_id, parts)

    reads.close()  # a checkpoint over the reads already served: they are proven in the bundle
    try:
        bundle = export_bundle(
            [evidence.source, reads.directory],
            store,
            execution_id,
            tenant,
            allow_unanchored=True,
            admit=admit,
            record_reads=record_reads,
            exported_by=reader,
        )
    except NoRecordError:
        return None
    return bundle if readable else None
