"""Who is asking: the authenticator the live transport requires, a bearer-token one, and the header one
for a deployment behind a trusted proxy (the only case where identity from request headers counts)."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import os
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, TypeAlias

from starlette.requests import HTTPConnection

from loom_otel.core import environment_variables as env
from loom_otel.core.exceptions import LoomOtelWarning, ReasoningConfigError
from loom_otel.core.runtime import env_bool, logger, warn
from loom_otel.live._feed import Viewer

__all__ = [
    "MIN_TOKEN_LENGTH",
    "PRINCIPAL_HEADER",
    "TENANT_HEADER",
    "TOKEN_COOKIE",
    "Authenticator",
    "TokensFile",
    "authenticate",
    "bearer_authenticator",
    "header_authenticator",
    "jwt_authenticator",
    "presented_token",
    "resolve_authenticator",
    "tokens_file_authenticator",
]

PRINCIPAL_HEADER: Final = "X-Loom-Principal"
TENANT_HEADER: Final = "X-Loom-Tenant"
MIN_TOKEN_LENGTH: Final = 16
TOKEN_COOKIE: Final = "loom_otel_token"
"""A cookie holding a token itself, read only by authenticators built with ``cookie=True`` (for an
application that sets one); the viewer's sign-in cookie holds a session instead (``viewer._sessions``)."""
_SHA256_PREFIX: Final = "sha256:"
_JWT_ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Asymmetric only: a key set names public keys, never a shared secret (no ``HS*``, never ``none``)."""

Authenticator: TypeAlias = Callable[[HTTPConnection], "Viewer | Awaitable[Viewer | None] | None"]
"""Maps a request to the viewer it proves, or ``None`` (treated like any non-audience viewer: 404)."""


def header_authenticator(principal_header: str = PRINCIPAL_HEADER, tenant_header: str = TENANT_HEADER) -> Authenticator:
    """Trust ``X-Loom-Principal`` / ``X-Loom-Tenant`` as set by an authenticating proxy in front of the
    app, which must strip them from client requests: anyone who reaches the app without that proxy can
    claim any identity. Warns (``LoomOtelWarning``) once, when built. Without the principal header:
    nobody."""
    warn(
        f"the live view takes the viewer's identity from the {principal_header} and {tenant_header} "
        "request headers as sent: only safe behind a proxy that authenticates every request, strips "
        "these headers from the client's and sets them itself, with the app reachable through it alone",
        LoomOtelWarning,
    )

    def authenticator(connection: HTTPConnection) -> Viewer | None:
        principal = connection.headers.get(principal_header, "").strip()
        if not principal:
            return None
        tenant = connection.headers.get(tenant_header, "").strip() or None
        return Viewer(principal, tenant)

    return authenticator


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def presented_token(connection: HTTPConnection, *, cookie: bool = False) -> str | None:
    """The token of ``Authorization: Bearer <token>``, else (``cookie``) of the sign-in cookie."""
    scheme, _, token = connection.headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    if cookie:
        return connection.cookies.get(TOKEN_COOKIE) or None
    return None


def bearer_authenticator(tokens: Mapping[str, Viewer]) -> Authenticator:
    """``Authorization: Bearer <token>`` proves the viewer the token was issued to (``loom-otel tail
    --token``). Tokens must be at least ``MIN_TOKEN_LENGTH`` characters (``secrets.token_urlsafe()``);
    only their SHA-256 digests are kept, and each request's token is looked up by its digest."""
    table: dict[bytes, Viewer] = {}
    for token, viewer in tokens.items():
        if not isinstance(viewer, Viewer) or not viewer.principal:
            raise ReasoningConfigError("bearer_authenticator: each token must map to a Viewer with a principal")
        if len(token.strip()) < MIN_TOKEN_LENGTH or token != token.strip():
            raise ReasoningConfigError(
                f"bearer_authenticator: a token of {viewer.principal!r} is shorter than {MIN_TOKEN_LENGTH} "
                "characters or has surrounding spaces (use secrets.token_urlsafe())"
            )
        table[_digest(token)] = viewer

    def authenticator(connection: HTTPConnection) -> Viewer | None:
        token = presented_token(connection)
        return table.get(_digest(token)) if token else None

    return authenticator


def resolve_authenticator(authenticator: Authenticator | None, trusted_proxy: bool | None) -> Authenticator:
    """The app's authenticator: the one given, else header identity when the deployment declares a
    trusted proxy (argument, then ``LOOM_OTEL_LIVE_TRUSTED_PROXY``); neither is a configuration error."""
    if authenticator is not None:
        if trusted_proxy:
            raise ReasoningConfigError(
                "create_app: pass authenticator= or trusted_proxy=True, not both "
                "(the authenticator decides who is asking)"
            )
        return authenticator
    if trusted_proxy is None:
        trusted_proxy = env_bool(env.LOOM_OTEL_LIVE_TRUSTED_PROXY, os.environ)
    if trusted_proxy:
        return header_authenticator()
    raise ReasoningConfigError(
        "create_app needs authenticator= (a function from the request to the Viewer it proves, such as "
        "bearer_authenticator({token: Viewer(...)})), or trusted_proxy=True (or "
        f"{env.LOOM_OTEL_LIVE_TRUSTED_PROXY}=true) when a proxy that authenticates every request sets "
        f"{PRINCIPAL_HEADER} / {TENANT_HEADER}: the live view trusts no identity a client can set"
    )


async def authenticate(authenticator: Authenticator, connection: HTTPConnection) -> Viewer | None:
    """Run ``authenticator`` (sync or async); one that raises or answers nonsense proves nobody."""
    try:
        result = authenticator(connection)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        logger.warning("loom-otel: the live view's authenticator failed (%s); answering 404", type(exc).__name__)
        return None
    return result if isinstance(result, Viewer) else None


def _read_tokens(where: str) -> dict[bytes, Viewer]:
    """The tokens file's table: SHA-256 digest of each token -> its principal (``ReasoningConfigError``
    naming the file and what is wrong)."""
    import tomllib

    try:
        with open(where, "rb") as fh:
            document = tomllib.load(fh)
    except OSError as exc:
        raise ReasoningConfigError(f"tokens file {where!r} cannot be read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ReasoningConfigError(f"tokens file {where!r} is not TOML ({exc})") from None
    table = document.get("tokens")
    if not isinstance(table, dict) or not table:
        raise ReasoningConfigError(f"tokens file {where!r} needs a [tokens] table mapping principals to tokens")
    digests: dict[bytes, Viewer] = {}
    for principal, token in table.items():
        if not isinstance(token, str) or not principal.strip():
            raise ReasoningConfigError(f"tokens file {where!r}: the token of {principal!r} must be a string")
        if token.startswith(_SHA256_PREFIX):
            try:
                digest = bytes.fromhex(token[len(_SHA256_PREFIX) :])
            except ValueError:
                digest = b""
            if len(digest) != hashlib.sha256().digest_size:
                raise ReasoningConfigError(f"tokens file {where!r}: {principal!r} has a malformed sha256:<hex> digest")
        elif len(token) < MIN_TOKEN_LENGTH or token != token.strip():
            raise ReasoningConfigError(
                f"tokens file {where!r}: the token of {principal!r} is shorter than {MIN_TOKEN_LENGTH} characters "
                "or has surrounding spaces (use secrets.token_urlsafe())"
            )
        else:
            digest = _digest(token)
        digests[digest] = Viewer(principal.strip())
    return digests


class TokensFile:
    """The authenticator of a static tokens file (``tokens_file_authenticator``), read again whenever the
    file changes: a token removed while the server runs proves nobody from the next request on. A file
    that becomes unreadable or invalid proves nobody until it is fixed (logged)."""

    __slots__ = ("_cookie", "_digests", "_lock", "_path", "_stamp")

    def __init__(self, path: str | os.PathLike[str], *, cookie: bool = False) -> None:
        self._path = os.fspath(path)
        self._cookie = cookie
        self._lock = threading.Lock()
        self._stamp = self._stat()
        self._digests = _read_tokens(self._path)

    def _stat(self) -> tuple[int, int, int, int] | None:
        try:
            found = os.stat(self._path)
        except OSError:
            return None
        return (found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)

    def _current(self) -> dict[bytes, Viewer]:
        stamp = self._stat()
        with self._lock:
            if stamp == self._stamp:
                return self._digests
        digests: dict[bytes, Viewer] = {}
        if stamp is not None:
            try:
                digests = _read_tokens(self._path)
            except ReasoningConfigError as exc:
                logger.warning("loom-otel: %s; no token is accepted until it is fixed", exc)
        else:
            logger.warning("loom-otel: tokens file %r is gone; no token is accepted", self._path)
        with self._lock:
            self._stamp, self._digests = stamp, digests
        return digests

    def holds(self, principal: str, digest: bytes) -> bool:
        """Whether the token with SHA-256 ``digest`` still proves ``principal`` (a session's check)."""
        viewer = self._current().get(digest)
        return viewer is not None and viewer.principal == principal

    def __call__(self, connection: HTTPConnection) -> Viewer | None:
        token = presented_token(connection, cookie=self._cookie)
        return self._current().get(_digest(token)) if token else None


def tokens_file_authenticator(path: str | os.PathLike[str], *, cookie: bool = False) -> TokensFile:
    """Static tokens from a TOML file: ``[tokens]`` maps each principal to its token, or to
    ``"sha256:<hex>"`` of it (so the file need not hold the token). Presented as ``Authorization:
    Bearer`` (or, with ``cookie``, a ``loom_otel_token`` cookie an application sets itself; the viewer's
    sign-in never does: its cookie holds a session, ``viewer._sessions``). The file is read again when it
    changes. The viewer has no tenant: the tenant is what the request asks for, and the reading rule
    decides."""
    return TokensFile(path, cookie=cookie)


def jwt_authenticator(
    jwks: str,
    *,
    issuer: str,
    audience: str,
    principal_claim: str = "sub",
    cookie: bool = False,
    leeway: float = 30.0,
) -> Authenticator:
    """OIDC / JWT bearer tokens verified by PyJWT: signature by a key of ``jwks`` (a JWKS file, or an
    ``http(s)://`` URL fetched and cached by ``PyJWKClient``), ``iss`` == ``issuer``, ``aud`` holds
    ``audience``, ``exp`` required and not passed. The principal is the ``principal_claim`` claim."""
    import json

    import jwt

    if not issuer or not audience:
        raise ReasoningConfigError("JWT authentication needs both an issuer (--issuer) and an audience (--audience)")
    client: jwt.PyJWKClient | None = None
    keys: jwt.PyJWKSet | None = None
    if jwks.startswith(("http://", "https://")):
        client = jwt.PyJWKClient(jwks, cache_keys=True, lifespan=300)
    else:
        try:
            with open(jwks, encoding="utf-8") as fh:
                keys = jwt.PyJWKSet.from_dict(json.load(fh))
        except (OSError, ValueError, jwt.PyJWTError) as exc:
            raise ReasoningConfigError(f"JWKS file {jwks!r} cannot be used ({type(exc).__name__}: {exc})") from None

    def key_for(token: str) -> object:
        if client is not None:
            return client.get_signing_key_from_jwt(token).key
        assert keys is not None
        kid = jwt.get_unverified_header(token).get("kid")
        candidates = [k for k in keys.keys if kid is None or k.key_id == kid]
        if len(candidates) != 1:
            raise jwt.InvalidTokenError("no single key matches the token's kid")
        return candidates[0].key

    def verify(token: str) -> Viewer | None:
        try:
            claims = jwt.decode(
                token,
                key_for(token),  # type: ignore[arg-type]
                algorithms=list(_JWT_ALGORITHMS),
                issuer=issuer,
                audience=audience,
                leeway=leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError:
            return None
        principal = claims.get(principal_claim)
        return Viewer(principal) if isinstance(principal, str) and principal.strip() else None

    async def authenticator(connection: HTTPConnection) -> Viewer | None:
        token = presented_token(connection, cookie=cookie)
        # off the event loop: fetching the issuer's keys (a JWKS URL) and checking the signature block
        return await asyncio.to_thread(verify, token) if token else None

    return authenticator
