"""``store_from_uri``: the one place a store is built from its URL (``LOOM_OTEL_REASONING_STORE``)."""

from __future__ import annotations

from typing import Final
from urllib.parse import unquote, urlparse

from loom_otel.core._evidence._store._file import FileReasoningStore
from loom_otel.core._evidence._store._protocol import MemoryReasoningStore, ReasoningStore
from loom_otel.core.exceptions import ReasoningConfigError

__all__ = ["STORE_FORMS", "store_from_uri"]

STORE_FORMS: Final = "file:///absolute/dir, an absolute path, memory:, or an fsspec URL (s3://bucket/prefix)"
"""What a store URL may be, for the messages that refuse one."""

_OWN_SCHEMES: Final = ("file", "memory")


def _fsspec_schemes() -> list[str] | None:
    """The protocols fsspec knows, or ``None`` when it is not installed (the ``s3`` extra)."""
    try:
        import fsspec
    except ImportError:
        return None
    return sorted(p for p in fsspec.available_protocols() if p != "file")


def _file_root(path: str, uri: str) -> str:
    if "\x00" in path:
        raise ReasoningConfigError(f"the store path in {uri!r} holds a NUL character")
    if not path.startswith("/") and not (len(path) > 2 and path[1] == ":"):  # POSIX, or a Windows drive
        why = "no directory" if not path else f"{path!r} is relative (it would depend on the working directory)"
        raise ReasoningConfigError(f"{why}: a file store needs an absolute directory")
    return path


def store_from_uri(uri: str, *, fsync: bool = True) -> ReasoningStore:
    """``file:///dir`` (or an absolute path), ``memory:``, or any fsspec URL (``s3://bucket/prefix``).

    ``ReasoningConfigError`` says why anything else is refused (the caller names the setting and
    ``STORE_FORMS``): a relative or empty path, a host in a file URL, an unknown scheme (listing the
    known ones), an fsspec location that cannot be opened.
    """
    if not uri.strip():
        raise ReasoningConfigError("empty reasoning store URL")
    if uri in ("memory:", "memory://"):
        return MemoryReasoningStore()
    try:
        parsed = urlparse(uri)
    except ValueError as exc:
        raise ReasoningConfigError(f"not a URL ({exc})") from None
    scheme = parsed.scheme.lower()
    if scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ReasoningConfigError(f"a file URL names no host ({parsed.netloc!r}): use file:///absolute/path")
        return FileReasoningStore(_file_root(unquote(parsed.path), uri), fsync=fsync)
    if scheme == "" or len(scheme) == 1:  # a plain path (or a Windows drive letter)
        return FileReasoningStore(_file_root(uri, uri), fsync=fsync)
    known = _fsspec_schemes()
    if known is None:
        raise ReasoningConfigError(
            f"unknown scheme {scheme!r}: loom-otel knows {', '.join(_OWN_SCHEMES)}; other schemes "
            "(s3, gs, ...) need fsspec (pip install 'loom-otel[s3]')"
        )
    if scheme not in known:
        raise ReasoningConfigError(
            f"unknown scheme {scheme!r}: loom-otel knows {', '.join(_OWN_SCHEMES)}, and fsspec knows {', '.join(known)}"
        )
    from loom_otel.core._evidence._store._fsspec import FsspecReasoningStore  # the s3 extra: loaded when named

    return FsspecReasoningStore(uri)
