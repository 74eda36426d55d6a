"""``store_from_uri``: the one place a store is built from its URL (``LOOM_OTEL_REASONING_STORE``)."""

from __future__ import annotations

from urllib.parse import unquote, urlparse

from loom_otel.core._store._file import FileReasoningStore
from loom_otel.core._store._protocol import MemoryReasoningStore, ReasoningStore
from loom_otel.core.exceptions import ReasoningConfigError

__all__ = ["store_from_uri"]


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
        from loom_otel.core._store._fsspec import FsspecReasoningStore  # the s3 extra: loaded when named
    except ImportError as exc:
        raise ReasoningConfigError(
            f"reasoning store {uri!r} needs fsspec (pip install 'loom-otel[s3]'): {exc}"
        ) from None
    return FsspecReasoningStore(uri)
