"""The viewer's address of a call (``loom.reasoning.url``): one spelling, shared by the capture that
writes the link and ``loom-otel serve`` that answers it."""

from __future__ import annotations

from urllib.parse import quote, urlencode

__all__ = ["execution_path", "reasoning_url"]


def execution_path(execution_id: str) -> str:
    """``/executions/{execution_id}``, the id percent-encoded as one path segment."""
    return "/executions/" + quote(execution_id, safe="")


def reasoning_url(base: str, execution_id: str, *, tenant: str | None, step_id: str, attempt: int) -> str:
    """``<base>/executions/<id>?tenant=..&step=..#attempt-N``: the page of one call's parts."""
    query = {"tenant": tenant, "step": step_id} if tenant is not None else {"step": step_id}
    return f"{base}{execution_path(execution_id)}?{urlencode(query)}#attempt-{attempt}"
