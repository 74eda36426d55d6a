"""GenAI semantic-convention values every vendor mapping derives the same way."""

from __future__ import annotations

import functools
from urllib.parse import urlsplit

from loom_otel.core import _attributes as attr
from loom_otel.core._journal._writer import AttributeValue

__all__ = ["model_name", "server_attributes"]


def server_attributes(base_url: object, into: dict[str, AttributeValue]) -> None:
    """``server.address`` and ``server.port`` from an SDK client's base URL (an ``httpx2.URL`` or a string);
    the port defaults by scheme. A client's base URL is parsed once."""
    if base_url is not None:
        into.update(_server(str(base_url)))


@functools.lru_cache(maxsize=256)
def _server(base_url: str) -> tuple[tuple[str, AttributeValue], ...]:
    url = urlsplit(base_url)
    if not url.hostname:
        return ()
    return ((attr.SERVER_ADDRESS, url.hostname), (attr.SERVER_PORT, url.port or (443 if url.scheme == "https" else 80)))


def model_name(value: object) -> str:
    """The request's model as a string ("" when absent)."""
    return value if isinstance(value, str) else str(value or "")
