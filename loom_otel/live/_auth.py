"""Who is asking: the authenticator the live transport requires, a bearer-token one, and the header one
for a deployment behind a trusted proxy (the only case where identity from request headers counts)."""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, TypeAlias

from starlette.requests import HTTPConnection

from loom_otel.core import environment_variables as env
from loom_otel.core._callbacks import logger
from loom_otel.core._settings import env_bool
from loom_otel.core._warnings import warn
from loom_otel.core.exceptions import LoomOtelWarning, ReasoningConfigError
from loom_otel.live._feed import Viewer

__all__ = [
    "MIN_TOKEN_LENGTH",
    "PRINCIPAL_HEADER",
    "TENANT_HEADER",
    "Authenticator",
    "authenticate",
    "bearer_authenticator",
    "header_authenticator",
    "resolve_authenticator",
]

PRINCIPAL_HEADER: Final = "X-Loom-Principal"
TENANT_HEADER: Final = "X-Loom-Tenant"
MIN_TOKEN_LENGTH: Final = 16

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
        scheme, _, token = connection.headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() != "bearer":
            return None
        return table.get(_digest(token.strip()))

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
