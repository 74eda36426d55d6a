"""How an I/O failure is told: the path, the system's message and its code, never more (an exception's
own text may hold what it was writing). Each caller adds what the failure means for the evidence."""

from __future__ import annotations

import errno
import os

__all__ = ["failure_detail", "store_location"]


def failure_detail(exc: BaseException, where: str | os.PathLike[str] | None = None) -> str:
    """``'<path>': <system message> (<ERRNO>)`` for an ``OSError`` (``where`` when the error names no
    file: a full disk's ``write`` does not); the exception's type for anything else."""
    if not isinstance(exc, OSError) or not exc.strerror:
        prefix = f"{str(os.fspath(where))!r}: " if where is not None else ""
        return f"{prefix}{type(exc).__name__}"
    path = exc.filename if exc.filename is not None else where
    code = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    prefix = f"{str(os.fspath(path))!r}: " if path is not None else ""
    return f"{prefix}{exc.strerror} ({code})"


def store_location(store: object) -> str:
    """Where a store keeps its blobs, for messages: its root directory, its URL, else its type."""
    root = getattr(store, "root", None)
    if root is not None:
        return str(root)
    url = getattr(store, "url", None)
    return str(url) if url is not None else type(store).__name__
