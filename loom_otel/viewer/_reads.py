"""Every read is evidence: each part served (and each read refused to an authenticated reader) appends a
chained ``read`` record (event ``loom.reasoning.read``) to the viewer's own journal origin, before the
answer leaves. A journal that cannot be written fails the read closed (503): no text is served without
its record. With ``forward_to`` the chained exporter forwards these records like checkpoints: as OTLP log
records when the log exporter named like the inner one reaches the same collector (never listed as traces),
else as root spans; without it each is marked local (``loom.audit.local``), kept in the journal only, and
``verify --against`` does not expect its origin in the collector's archive. ``verify`` checks them either way."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final, NamedTuple

from opentelemetry.sdk.trace.export import SpanExporter

from loom_otel.audit._read import PartReading
from loom_otel.audit._read_records import ReadRecord, read_record
from loom_otel.core.journal import AttributeValue, Journal, iter_records, open_journal
from loom_otel.core.journal import attributes as attr

__all__ = ["NOT_FOUND", "ReadLog", "ReadRecord", "Recorded", "read_record", "read_records"]

NOT_FOUND: Final = "not-found"
"""The outcome of a read that found nothing the reader may read (missing and forbidden alike)."""


class ReadLog:
    """The viewer process's read journal (opened on first use: a worker process gets its own origin)."""

    def __init__(self, directory: str | os.PathLike[str], forward_to: SpanExporter | None = None) -> None:
        self.directory = Path(directory)
        self._forward_to = forward_to
        self._journal: Journal | None = None
        self._chain: SpanExporter | None = None
        self._lock = threading.Lock()

    def _open(self) -> Journal:
        with self._lock:
            if self._journal is None:
                self._journal = open_journal(self.directory, durability="batch")
                if self._forward_to is not None:  # the chained exporter's sweeper delivers each read record
                    from loom_otel.exporters.chain import ChainedSpanExporter
                    from loom_otel.exporters.chain._logs import beside, logs_from_environment

                    # As log records (no trace holds a read) when a log exporter reaches the same collector.
                    logs = beside(self._forward_to, logs_from_environment())
                    self._chain = ChainedSpanExporter(self._forward_to, journal=self._journal, logs=logs)
            return self._journal

    def parts(
        self, reader: str, tenant: str | None, execution_id: str, parts: Iterable[PartReading]
    ) -> Recorded | None:
        """One record per part whose text was looked up (a part that kept no text is no read); where they
        landed (``None``: none was a read)."""
        journal = self._open()
        read = [part for part in parts if part.ref]
        records = [
            self._marked(_attributes(reader, tenant, execution_id, part.ref, part.digest, part.status)) for part in read
        ]
        entries = journal.append_all(attr.RECORD_READ, records)  # a page's records in one turn of the journal
        if not entries:
            return None
        return Recorded(entries[0].origin, reader, tuple((e.seq, p.ref) for e, p in zip(entries, read, strict=True)))

    def refused(self, reader: str, tenant: str | None, execution_id: str) -> None:
        values = _attributes(reader, tenant, execution_id, "", "", NOT_FOUND)
        self._open().append(attr.RECORD_READ, self._marked(values))

    def _marked(self, values: dict[str, AttributeValue]) -> dict[str, AttributeValue]:
        """``values``, marked local when this log does not forward its records."""
        if self._forward_to is None:
            values[attr.AUDIT_LOCAL] = True
        return values

    def flush(self) -> None:
        if self._journal is not None:
            self._journal.flush()

    def close(self) -> None:
        """Anchor what was appended with a checkpoint (the journal is the process's, shared with any
        capture into the same directory, so it is left open), then deliver what is owed and shut the
        chained exporter down (what it cannot deliver stays in its outbox). Idempotent."""
        if self._journal is not None:
            self._journal.checkpoint()
            self._journal.flush()
        if self._chain is not None:
            self._chain.shutdown()


class Recorded(NamedTuple):
    """The read records one read appended (``ReadLog.parts``): its origin, its reader, and per record its
    ``seq`` and the ref it names."""

    origin: str
    reader: str
    reads: tuple[tuple[int, str], ...]


def _attributes(  # noqa: PLR0917 - the fields of one record, in DESIGN's order
    reader: str, tenant: str | None, execution_id: str, ref: str, digest: str, outcome: str
) -> dict[str, AttributeValue]:
    values: dict[str, AttributeValue] = {
        attr.READ_READER: reader,
        attr.EXECUTION_ID: execution_id,
        attr.READ_REF: ref,
        attr.READ_DIGEST: digest,
        attr.READ_OUTCOME: str(outcome),
    }
    if tenant is not None:
        values[attr.TENANT] = tenant
    return values


def read_records(directory: str | os.PathLike[str]) -> Iterator[ReadRecord]:
    """The ``read`` records of a journal directory, in chain order per origin."""
    for record in iter_records(directory):
        read = read_record(record)
        if read is not None:
            yield read
