"""The reasoning store seam: sealed envelopes, the ``ReasoningStore`` protocol, file and memory stores.

A blob is sealed to the (tenant, execution) that captured it: its address is derived from the
envelope, so the same text captured by two executions is two blobs, and ``get`` answers ``None``
alike for "absent", "erased" and "sealed to another execution or tenant".
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol, runtime_checkable
from urllib.parse import unquote, urlparse

from loom_otel.core._canonical import canonical_json
from loom_otel.core.exceptions import ReasoningConfigError

__all__ = [
    "Envelope",
    "FileReasoningStore",
    "MemoryReasoningStore",
    "ReasoningStore",
    "scope_of",
    "store_from_uri",
]

_MAGIC: Final = b"LOOMR1\n"
_REF: Final = re.compile(r"^[0-9a-f]{32}/[0-9a-f]{64}$")


def scope_of(tenant: str | None, execution_id: str) -> str:
    """The directory-safe name of one (tenant, execution) scope; erasure removes exactly this scope."""
    return hashlib.sha256(canonical_json(["loom-otel/scope/v1", tenant, execution_id])).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Envelope:
    """Readable text sealed to the execution (and tenant) that captured it.

    Built with ``Envelope.seal``: the UTF-8 body is encoded once, and the digest and the store address
    are computed from it without another copy.
    """

    tenant: str | None
    execution_id: str
    digest: str
    ref: str
    body: bytes = field(repr=False)

    @classmethod
    def seal(cls, text: str, *, execution_id: str, tenant: str | None = None) -> Envelope:
        body = text.encode()
        digest = hashlib.sha256(body).hexdigest()
        scope = scope_of(tenant, execution_id)
        address = hashlib.sha256(canonical_json(["loom-otel/blob/v1", scope, digest])).hexdigest()
        return cls(tenant, execution_id, digest, f"{scope}/{address}", body)

    @property
    def size(self) -> int:
        return len(self.body)

    def header(self) -> bytes:
        """The seal written in front of the body: who the blob belongs to and what it must hash to."""
        return canonical_json({"tenant": self.tenant, "execution_id": self.execution_id, "digest": self.digest}) + b"\n"


def _opens(ref: str, tenant: str | None, execution_id: str) -> bool:
    """A ref opens only for the scope it was sealed to (checked before any read)."""
    return _REF.match(ref) is not None and ref.startswith(scope_of(tenant, execution_id) + "/")


def _unseal(blob: bytes, tenant: str | None, execution_id: str) -> bytes | None:
    if not blob.startswith(_MAGIC):
        return None
    end = blob.find(b"\n", len(_MAGIC))
    if end < 0:
        return None
    expected = canonical_json({"tenant": tenant, "execution_id": execution_id})
    try:
        header = json.loads(blob[len(_MAGIC) : end])
    except ValueError:
        return None
    if canonical_json({"tenant": header.get("tenant"), "execution_id": header.get("execution_id")}) != expected:
        return None
    return blob[end + 1 :]


@runtime_checkable
class ReasoningStore(Protocol):
    """Where readable reasoning lives, sealed. Implementations must make ``put`` idempotent."""

    def put(self, envelope: Envelope) -> str:
        """Keep the sealed text; return its ref (the same ref for the same envelope, storing nothing new)."""
        ...

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        """The UTF-8 text, or ``None`` when absent, erased, or sealed to another execution or tenant."""
        ...

    def delete(self, ref: str) -> None:
        """Remove one blob; removing an absent one is not an error."""
        ...

    def erase_execution(self, tenant: str | None, execution_id: str) -> int:
        """Remove every blob of one execution; return how many were removed."""
        ...


class MemoryReasoningStore:
    """A process-local store (``memory:``), for tests and throw-away runs."""

    def __init__(self) -> None:
        self._blobs: dict[str, tuple[str | None, str, bytes]] = {}
        self._lock = threading.Lock()

    def put(self, envelope: Envelope) -> str:
        with self._lock:
            self._blobs.setdefault(envelope.ref, (envelope.tenant, envelope.execution_id, envelope.body))
        return envelope.ref

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        if not _opens(ref, tenant, execution_id):
            return None
        with self._lock:
            entry = self._blobs.get(ref)
        if entry is None or entry[0] != tenant or entry[1] != execution_id:
            return None
        return entry[2]

    def delete(self, ref: str) -> None:
        with self._lock:
            self._blobs.pop(ref, None)

    def erase_execution(self, tenant: str | None, execution_id: str) -> int:
        prefix = scope_of(tenant, execution_id) + "/"
        with self._lock:
            doomed = [ref for ref in self._blobs if ref.startswith(prefix)]
            for ref in doomed:
                del self._blobs[ref]
        return len(doomed)

    def __len__(self) -> int:
        return len(self._blobs)

    def __repr__(self) -> str:
        return f"MemoryReasoningStore(blobs={len(self._blobs)})"


class FileReasoningStore:
    """Blobs as files under ``root/blobs/<scope>/<address>``; writes are atomic (write, fsync, rename).

    ``fsync=False`` keeps the rename atomic but leaves durability to the OS (benchmarks only; also
    ``LOOM_OTEL_STORE_FSYNC=false``).
    """

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.root = Path(root).expanduser().absolute()
        self.fsync = fsync
        self._blobs = self.root / "blobs"
        try:
            self._blobs.mkdir(parents=True, exist_ok=True)
            probe = self._blobs / f".probe-{uuid.uuid4().hex}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise ReasoningConfigError(
                f"reasoning store directory {str(self.root)!r} is not a writable directory: "
                f"{exc.strerror or type(exc).__name__}"
            ) from None

    def put(self, envelope: Envelope) -> str:
        path = self._blobs / envelope.ref
        if path.exists():
            return envelope.ref
        directory = path.parent
        created = not directory.exists()
        directory.mkdir(exist_ok=True)
        tmp = directory / f".tmp-{uuid.uuid4().hex}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, _MAGIC)
            os.write(fd, envelope.header())
            view = memoryview(envelope.body)
            while view:
                view = view[os.write(fd, view) :]
            if self.fsync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(tmp, path)
        if self.fsync:
            _fsync_dir(directory)
            if created:
                _fsync_dir(self._blobs)
        return envelope.ref

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        if not _opens(ref, tenant, execution_id):
            return None
        try:
            blob = (self._blobs / ref).read_bytes()
        except FileNotFoundError:
            return None
        return _unseal(blob, tenant, execution_id)

    def delete(self, ref: str) -> None:
        if _REF.match(ref):
            (self._blobs / ref).unlink(missing_ok=True)

    def erase_execution(self, tenant: str | None, execution_id: str) -> int:
        directory = self._blobs / scope_of(tenant, execution_id)
        if not directory.exists():
            return 0
        count = sum(1 for p in directory.iterdir() if not p.name.startswith("."))
        shutil.rmtree(directory, ignore_errors=True)
        return count

    def __repr__(self) -> str:
        return f"FileReasoningStore({str(self.root)!r})"


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def store_from_uri(uri: str, *, fsync: bool = True) -> ReasoningStore:
    """``file:///dir`` (or a plain path), ``memory:``, or any fsspec URL (``s3://bucket/prefix``)."""
    if not uri:
        raise ReasoningConfigError("empty reasoning store URI")
    if uri in ("memory:", "memory://"):
        return MemoryReasoningStore()
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ReasoningConfigError(f"file store URI must be file:///absolute/path, got {uri!r}")
        return FileReasoningStore(unquote(parsed.path), fsync=fsync)
    if parsed.scheme == "" or len(parsed.scheme) == 1:  # a plain path (or a Windows drive letter)
        return FileReasoningStore(uri, fsync=fsync)
    try:
        from loom_otel.core._fsspec_store import FsspecReasoningStore
    except ImportError as exc:
        raise ReasoningConfigError(
            f"reasoning store {uri!r} needs fsspec (pip install 'loom-otel[s3]'): {exc}"
        ) from None
    return FsspecReasoningStore(uri)
