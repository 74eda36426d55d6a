"""Browser sessions of ``loom-otel serve`` (DESIGN "Who may read": sessions).

Signing in with a token sets a cookie that holds a session value, never the token: the principal, when
the session ends, a random nonce and the SHA-256 digest of the token it was opened with, MAC'd
(HMAC-SHA256) with a server key. Every worker reads the same key file, so any of them checks a session
another opened. A session counts only while its token does: the authenticator's ``holds(principal,
digest)`` (the tokens file, re-read when it changes) is asked on every request, so removing a token ends
its sessions; a JWT's session ends no later than the JWT's ``exp``. Signing out records the session's
nonce in ``<key file>.signed-out`` (appended, shared by the workers), so a replayed cookie is refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from loom_otel.core.exceptions import ReasoningConfigError
from loom_otel.core.journal import canonical_json
from loom_otel.core.runtime import private_directory

__all__ = ["SESSION_COOKIE", "SESSION_SECONDS", "Sessions", "load_session_key"]

SESSION_COOKIE: Final = "loom_otel_session"
"""The sign-in cookie (HttpOnly, SameSite=Strict): a session value, never the token."""
SESSION_SECONDS: Final = 86400
"""How long a session lasts at most (a day)."""
_KEY_BYTES: Final = 32
_VERSION: Final = "v1"
_SIGNED_OUT_SUFFIX: Final = ".signed-out"

Holds = Callable[[str, bytes], bool]
"""Whether a principal's token with this SHA-256 digest still proves it (``TokensFile.holds``)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def load_session_key(path: str | os.PathLike[str]) -> bytes:
    """The server key in ``path``, made (32 random bytes, mode 0600, in a 0700 directory when the
    directory is new) when absent; a concurrent maker's key wins and both use it. A key others may read
    or shorter than 32 bytes is a ``ReasoningConfigError``."""
    where = Path(path).expanduser()
    try:
        key = where.read_bytes()
    except FileNotFoundError:
        try:
            if not where.parent.exists():
                private_directory(where.parent)
            tmp = where.with_name(f".{where.name}.{secrets.token_hex(8)}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, secrets.token_bytes(_KEY_BYTES))
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, where)
            except FileExistsError:
                pass
            finally:
                tmp.unlink(missing_ok=True)
            key = where.read_bytes()
        except OSError as exc:
            raise ReasoningConfigError(f"session key {str(where)!r} cannot be made ({exc.strerror or exc})") from None
    except OSError as exc:
        raise ReasoningConfigError(f"session key {str(where)!r} cannot be read ({exc.strerror or exc})") from None
    if len(key) < _KEY_BYTES:
        raise ReasoningConfigError(f"session key {str(where)!r} is shorter than {_KEY_BYTES} bytes")
    if os.stat(where).st_mode & 0o077:  # whoever reads it can make a session for anyone
        raise ReasoningConfigError(f"session key {str(where)!r} is readable by others (chmod 600 it)")
    return key


def jwt_expiry(token: str) -> int | None:
    """The ``exp`` claim of a JWT the authenticator has verified (``None``: not a JWT, or none)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(_unb64(parts[1]))
    except (ValueError, binascii.Error):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return int(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


class Sessions:
    """Opens, checks and ends browser sessions. ``key_file``: the key shared by the workers (``None``: a
    random key and the signed-out sessions of this process only)."""

    def __init__(self, key_file: str | os.PathLike[str] | None = None) -> None:
        self._lock = threading.Lock()
        self._ended: dict[str, int] = {}
        """Signed-out nonces -> when their session would have ended."""
        self._stamp: tuple[int, int, int] | None = None
        if key_file is None:
            self._key = secrets.token_bytes(_KEY_BYTES)
            self._signed_out: Path | None = None
        else:
            self._key = load_session_key(key_file)
            where = Path(key_file).expanduser()
            self._signed_out = where.with_name(where.name + _SIGNED_OUT_SUFFIX)

    def _mac(self, principal: str, until: int, nonce: str, digest: str) -> str:
        body = canonical_json(["loom-otel/session/v1", principal, until, nonce, digest])
        return _b64(hmac.new(self._key, body, hashlib.sha256).digest())

    def start(self, principal: str, token: str, *, now: float | None = None) -> str:
        """A new session of ``principal``, proved by ``token``: the cookie's value."""
        now = time.time() if now is None else now
        until = int(now) + SESSION_SECONDS
        expiry = jwt_expiry(token)
        if expiry is not None:
            until = min(until, expiry)
        nonce = secrets.token_hex(16)
        digest = hashlib.sha256(token.encode()).hexdigest()
        name = _b64(principal.encode())
        return ".".join([_VERSION, name, str(until), nonce, digest, self._mac(principal, until, nonce, digest)])

    def principal(self, value: str, holds: Holds | None = None, *, now: float | None = None) -> str | None:
        """Whose session ``value`` is, if it is one this server opened, not ended, not signed out, and
        (with ``holds``) its token still proves its principal; ``None`` otherwise."""
        parsed = self._parse(value)
        if parsed is None:
            return None
        principal, until, nonce, digest = parsed
        if until <= (time.time() if now is None else now) or self._is_signed_out(nonce):
            return None
        if holds is not None and not holds(principal, bytes.fromhex(digest)):
            return None
        return principal

    def end(self, value: str) -> None:
        """Sign out: the session ``value`` is refused from now on, by every worker sharing the key file."""
        parsed = self._parse(value)
        if parsed is None:
            return
        _, until, nonce, _ = parsed
        with self._lock:
            self._ended[nonce] = until
        if self._signed_out is not None:
            fd = os.open(self._signed_out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, f"{nonce} {until}\n".encode())
            finally:
                os.close(fd)

    def _parse(self, value: str) -> tuple[str, int, str, str] | None:
        fields = value.split(".")
        if len(fields) != 6 or fields[0] != _VERSION:
            return None
        _, name, until_text, nonce, digest, mac = fields
        try:
            principal = _unb64(name).decode()
            until = int(until_text)
            bytes.fromhex(digest)
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return None
        if len(digest) != 64 or not hmac.compare_digest(mac, self._mac(principal, until, nonce, digest)):
            return None
        return principal, until, nonce, digest

    def _is_signed_out(self, nonce: str) -> bool:
        self._reload()
        with self._lock:
            return nonce in self._ended

    def _reload(self) -> None:
        """The signed-out sessions other workers recorded (read again when the file changed)."""
        if self._signed_out is None:
            return
        try:
            found = os.stat(self._signed_out)
        except FileNotFoundError:
            return
        stamp = (found.st_ino, found.st_size, found.st_mtime_ns)
        if stamp == self._stamp:
            return
        now = int(time.time())
        ended: dict[str, int] = {}
        with open(self._signed_out, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                nonce, _, until = line.strip().partition(" ")
                if until.isdigit() and int(until) > now:
                    ended[nonce] = int(until)
        with self._lock:
            self._ended.update(ended)
            self._stamp = stamp
