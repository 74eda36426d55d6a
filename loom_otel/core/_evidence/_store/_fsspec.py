"""``FsspecReasoningStore``: the sealed store on any fsspec URL (``s3://bucket/prefix``, ``gs://``, ...).

The layout mirrors ``FileReasoningStore``: ``<url>/blobs/<scope>/<address>``, each object the seal
header then the UTF-8 body, and the execution's digest key (``hmac-sha256`` mode) at
``<url>/blobs/<scope>/.digest-key``. The scope directory is the tenant-and-execution prefix, so
``erase_execution`` is one prefix delete.

- Put is conditional (put-if-absent: ``pipe_file(..., mode="create")``, which s3fs sends as
  ``If-None-Match: *``); a precondition failure means the content-addressed blob is already there.
- Transient failures (timeouts, dropped connections, throttling, 5xx) are retried with backoff on top
  of the backend's own retries; "not found", "exists" and "forbidden" are answers, never retried.
- Construction writes and removes a probe object, so bad credentials, a missing bucket or an
  unreachable endpoint fail there with a ``ReasoningConfigError`` instead of at the first capture.

Needs the ``s3`` extra (``fsspec``, ``s3fs``) or the fsspec backend for the URL's scheme.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
import uuid
from collections.abc import Callable
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit, urlunsplit

from loom_otel.core._evidence._store._protocol import (
    DIGEST_KEY_BYTES,
    DIGEST_KEY_NAME,
    Envelope,
    scope_of,
)
from loom_otel.core._evidence._store._sealed import REF, Unsealed, opens, unseal_audience
from loom_otel.core.exceptions import ReasoningConfigError

__all__ = ["FsspecReasoningStore"]

T = TypeVar("T")

_TRANSIENT_ERRNO: Final = frozenset(
    {errno.EAGAIN, errno.EBUSY, errno.ECONNABORTED, errno.ECONNREFUSED, errno.ECONNRESET, errno.EIO}
    | {errno.EREMOTEIO, errno.ETIMEDOUT}
)
# Backend exceptions that are not OSError subclasses but mean "try again" (botocore, aiohttp).
_TRANSIENT_NAMES: Final = frozenset(
    {
        "ClientConnectorError",
        "ClientOSError",
        "ClientPayloadError",
        "ConnectTimeoutError",
        "ConnectionClosedError",
        "EndpointConnectionError",
        "HTTPClientError",
        "ReadTimeoutError",
        "ServerDisconnectedError",
    }
)
_ANSWERS: Final = (FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError, NotADirectoryError)


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, _ANSWERS):
        return False
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNO:
        return True
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def _public_url(url: str) -> str:
    """The URL without any ``user:password@`` part, for messages and ``repr``."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


class FsspecReasoningStore:
    """Sealed blobs on an fsspec filesystem; ``storage_options`` go to the backend (``key``, ``secret``,
    ``endpoint_url``, ``client_kwargs``, ...). ``retries``: attempts per operation on transient errors."""

    def __init__(self, url: str, *, retries: int = 4, backoff: float = 0.2, **storage_options: Any) -> None:
        self.url = _public_url(url)
        self.retries = max(1, retries)
        self.backoff = backoff
        try:
            import fsspec.core
        except ImportError as exc:
            raise ReasoningConfigError(
                f"reasoning store {self.url!r} needs fsspec (pip install 'loom-otel[s3]'): {exc}"
            ) from None
        scheme = urlsplit(url).scheme
        if scheme in ("s3", "s3a", "gs", "gcs") and "use_listings_cache" not in storage_options:
            storage_options["use_listings_cache"] = False  # another process may write or erase
        try:
            fs, root = fsspec.core.url_to_fs(url, **storage_options)
        except Exception as exc:  # some backends connect here (ftp: a name lookup's socket.gaierror)
            raise ReasoningConfigError(
                f"reasoning store {self.url!r} cannot be opened ({type(exc).__name__}: {exc})"
            ) from None
        self._fs: Any = fs
        self._blobs = f"{str(root).rstrip('/')}/blobs"
        self._probe()

    def _probe(self) -> None:
        probe = f"{self._blobs}/.probe-{uuid.uuid4().hex}"
        try:  # one attempt: the backend's own retries are enough to tell "down" from "slow"
            self._fs.pipe_file(probe, b"")
            self._fs.rm_file(probe)
        except PermissionError as exc:
            raise ReasoningConfigError(
                f"reasoning store {self.url!r} refused the credentials or access ({exc}); check the key, "
                "secret and the permissions on the bucket"
            ) from None
        except FileNotFoundError as exc:
            raise ReasoningConfigError(
                f"reasoning store {self.url!r}: the bucket or location does not exist ({exc})"
            ) from None
        except Exception as exc:
            raise ReasoningConfigError(
                f"reasoning store {self.url!r} is not usable ({type(exc).__name__}: {exc})"
            ) from None

    def _retry(self, operation: Callable[[], T]) -> T:
        for attempt in range(self.retries):
            try:
                return operation()
            except Exception as exc:
                if attempt + 1 >= self.retries or not _transient(exc):
                    raise
                time.sleep(self.backoff * (2**attempt))
        raise AssertionError("unreachable")

    def _path(self, ref: str) -> str:
        return f"{self._blobs}/{ref}"

    def _create(self, path: str, data: bytes) -> bool:
        """Write ``data`` at ``path`` only if nothing is there; ``False`` when something already was."""
        try:
            self._retry(lambda: self._fs.pipe_file(path, data, mode="create"))
        except FileExistsError:
            return False
        except TypeError:  # a backend without put-if-absent: check, then write (content-addressed)
            if self._retry(lambda: bool(self._fs.exists(path))):
                return False
            self._retry(lambda: self._fs.pipe_file(path, data))
        except OSError as exc:
            # A precondition failure some servers report without naming the condition (412 -> EINVAL),
            # or a retried write whose first attempt landed: the object is there, and it is ours.
            if exc.errno == errno.EINVAL and self._retry(lambda: bool(self._fs.exists(path))):
                return False
            raise
        return True

    def put(self, envelope: Envelope) -> str:
        self._create(self._path(envelope.ref), b"".join(envelope.sealed()))
        return envelope.ref

    def get(self, ref: str, *, tenant: str | None, execution_id: str) -> bytes | None:
        opened = self.unsealed(ref, tenant=tenant, execution_id=execution_id)
        return None if opened is None else opened.body

    def unsealed(self, ref: str, *, tenant: str | None, execution_id: str) -> Unsealed | None:
        if not opens(ref, tenant, execution_id):
            return None
        try:
            blob: bytes = self._retry(lambda: self._fs.cat_file(self._path(ref)))
        except FileNotFoundError:
            return None
        return unseal_audience(blob, tenant, execution_id)

    def exists(self, ref: str) -> bool:
        return REF.match(ref) is not None and self._retry(lambda: bool(self._fs.exists(self._path(ref))))

    def delete(self, ref: str) -> None:
        if not REF.match(ref):
            return
        with contextlib.suppress(FileNotFoundError):
            self._retry(lambda: self._fs.rm_file(self._path(ref)))

    def digest_key(self, tenant: str | None, execution_id: str, *, create: bool = False) -> bytes | None:
        path = f"{self._blobs}/{scope_of(tenant, execution_id)}/{DIGEST_KEY_NAME}"
        try:
            key: bytes = self._retry(lambda: self._fs.cat_file(path))
        except FileNotFoundError:
            if not create:
                return None
            self._create(path, os.urandom(DIGEST_KEY_BYTES))
            key = self._retry(lambda: self._fs.cat_file(path))
        if len(key) != DIGEST_KEY_BYTES:
            return None
        return key

    def erase_execution(self, tenant: str | None, execution_id: str) -> int:
        prefix = f"{self._blobs}/{scope_of(tenant, execution_id)}"
        try:
            found: list[str] = self._retry(lambda: list(self._fs.find(prefix)))
        except FileNotFoundError:
            return 0
        if not found:
            return 0
        count = sum(1 for path in found if REF.match(path[len(self._blobs) + 1 :]))
        with contextlib.suppress(FileNotFoundError):
            self._retry(lambda: self._fs.rm(prefix, recursive=True))
        return count

    def __repr__(self) -> str:
        return f"FsspecReasoningStore({self.url!r})"
