"""Who is asking: the pluggable authenticator of the live transport, and the default one (headers)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Final, TypeAlias

from starlette.requests import HTTPConnection

from loom_otel.core._callbacks import logger
from loom_otel.core._live_feed import Viewer

__all__ = ["PRINCIPAL_HEADER", "TENANT_HEADER", "Authenticator", "authenticate", "header_authenticator"]

PRINCIPAL_HEADER: Final = "X-Loom-Principal"
TENANT_HEADER: Final = "X-Loom-Tenant"

Authenticator: TypeAlias = Callable[[HTTPConnection], "Viewer | Awaitable[Viewer | None] | None"]
"""Maps a request to the viewer it proves, or ``None`` (treated like any non-audience viewer: 404)."""


def header_authenticator(principal_header: str = PRINCIPAL_HEADER, tenant_header: str = TENANT_HEADER) -> Authenticator:
    """Trust ``X-Loom-Principal`` / ``X-Loom-Tenant`` as set by an authenticating proxy in front of the
    app (which must strip them from client requests). Without the principal header: nobody."""

    def authenticator(connection: HTTPConnection) -> Viewer | None:
        principal = connection.headers.get(principal_header, "").strip()
        if not principal:
            return None
        tenant = connection.headers.get(tenant_header, "").strip() or None
        return Viewer(principal, tenant)

    return authenticator


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
