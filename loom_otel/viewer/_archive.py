"""A collector archive on S3 (or any fsspec URL), read by ``loom-otel serve`` through a local mirror:
the collector's ``file`` exporter only appends, so each look brings over the bytes added since the last
one (a range read), and a shorter or rewritten object is fetched again whole. Workers of one host share
the mirror under a file lock; the capture index is built on it as on a local archive."""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any, Final

from loom_otel.core.exceptions import ReasoningConfigError

__all__ = ["RemoteArchive", "is_remote"]

_CHUNK: Final = 8 << 20


def is_remote(source: str) -> bool:
    """An fsspec URL other than ``file://`` (``s3://bucket/key``)."""
    scheme, sep, _ = source.partition("://")
    return bool(sep) and len(scheme) > 1 and scheme != "file"


class RemoteArchive:
    def __init__(self, url: str, mirror_dir: str | os.PathLike[str] | None = None, **storage_options: Any) -> None:
        try:
            import fsspec.core
        except ImportError as exc:
            raise ReasoningConfigError(f"archive {url!r} needs fsspec (pip install 'loom-otel[s3]'): {exc}") from None
        if url.startswith(("s3://", "s3a://")) and "use_listings_cache" not in storage_options:
            storage_options["use_listings_cache"] = False  # the collector keeps appending
        try:
            self._fs, self._path = fsspec.core.url_to_fs(url, **storage_options)
        except (ImportError, ValueError, TypeError) as exc:
            raise ReasoningConfigError(f"archive {url!r} cannot be opened ({type(exc).__name__}: {exc})") from None
        name = hashlib.sha256(url.encode()).hexdigest()[:24]
        directory = Path(mirror_dir) if mirror_dir is not None else Path(tempfile.gettempdir())
        directory.mkdir(parents=True, exist_ok=True)
        self.mirror = directory / f"loom-otel-archive-{name}.jsonl"
        self._lock = directory / f".loom-otel-archive-{name}.lock"
        self.url = url

    def check(self) -> None:
        """The archive exists and can be read (``ReasoningConfigError`` naming it otherwise)."""
        try:
            self._fs.info(self._path)
        except Exception as exc:
            raise ReasoningConfigError(f"archive {self.url!r} cannot be read ({type(exc).__name__})") from None

    def sync(self) -> Path:
        """Bring the mirror up to the archive's current size; its path."""
        with self._lock.open("a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            size = int(self._fs.info(self._path)["size"])
            have = self.mirror.stat().st_size if self.mirror.exists() else 0
            if size < have or (have and not self._same_head(min(have, 4096))):
                self.mirror.unlink()  # rewritten: start over (the index sees a new file and rebuilds)
                have = 0
            if size > have:
                with self.mirror.open("ab") as out:
                    for start in range(have, size, _CHUNK):
                        out.write(self._fs.cat_file(self._path, start=start, end=min(size, start + _CHUNK)))
                    out.flush()
                    os.fsync(out.fileno())
            elif not self.mirror.exists():
                self.mirror.touch()
        return self.mirror

    def _same_head(self, length: int) -> bool:
        with self.mirror.open("rb") as fh:
            local = fh.read(length)
        return bool(self._fs.cat_file(self._path, start=0, end=length) == local)
