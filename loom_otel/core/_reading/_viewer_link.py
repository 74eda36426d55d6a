"""The viewer's address of a call (``loom.reasoning.url``): one spelling, shared by the capture that
writes the link and ``loom-otel serve`` that answers it (its pages, and ``/open?url=``, the one-parameter
link a tracing backend that percent-encodes a whole value into its link template can make)."""

from __future__ import annotations

from typing import Final
from urllib.parse import quote, urlencode, urlsplit

__all__ = ["OPEN_PATH", "execution_path", "opened_path", "reasoning_url"]

OPEN_PATH: Final = "/open"
"""The viewer's route that opens a ``loom.reasoning.url`` given whole as its ``url`` parameter."""
_EXECUTIONS: Final = "/executions/"


def execution_path(execution_id: str) -> str:
    """``/executions/{execution_id}``, the id percent-encoded as one path segment."""
    return "/executions/" + quote(execution_id, safe="")


def reasoning_url(base: str, execution_id: str, *, tenant: str | None, step_id: str, attempt: int) -> str:
    """``<base>/executions/<id>?tenant=..&step=..#attempt-N``: the page of one call's parts."""
    query = {"tenant": tenant, "step": step_id} if tenant is not None else {"step": step_id}
    return f"{base}{execution_path(execution_id)}?{urlencode(query)}#attempt-{attempt}"


def opened_path(url: str) -> str | None:
    """Where ``/open?url=<url>`` leads, relative to ``/open``: ``executions/<id>`` with the query and
    fragment of a ``loom.reasoning.url``. Its scheme, host and any path before ``/executions/`` are dropped,
    so the viewer never redirects off its own site (and a viewer served under a path prefix keeps it).
    ``None`` for anything that is not the address of an execution's page."""
    if any(c.isspace() or not c.isprintable() or c == "\\" for c in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    _, found, execution = parts.path.rpartition(_EXECUTIONS)
    if not found or not execution or "/" in execution:
        return None
    query = f"?{parts.query}" if parts.query else ""
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    return f"{_EXECUTIONS.lstrip('/')}{execution}{query}{fragment}"
