"""GenAI semantic-convention values every vendor mapping derives the same way."""

from __future__ import annotations

from urllib.parse import urlsplit

from loom_otel.core import _attributes as attr
from loom_otel.core._journal import AttributeValue

__all__ = ["model_name", "server_attributes"]


def server_attributes(base_url: object, into: dict[str, AttributeValue]) -> None:
    """``server.address`` and ``server.port`` from an SDK client's base URL (an ``httpx2.URL`` or a string);
    the port defaults by scheme."""
    if base_url is None:
        return
    url = urlsplit(str(base_url))
    if url.hostname:
        into[attr.SERVER_ADDRESS] = url.hostname
        into[attr.SERVER_PORT] = url.port or (443 if url.scheme == "https" else 80)


def model_name(value: object) -> str:
    """The request's model as a string ("" when absent)."""
    return value if isinstance(value, str) else str(value or "")
