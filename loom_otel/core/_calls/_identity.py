"""Whose a model call is (DESIGN "Execution identity"): decided once per call, in one place.

1. an explicit ``execution()`` scope;
2. else the transcript's lineage: the execution (of no tenant, and named by no ``execution()`` of another
   process) that this process's binding records attribute the request's latest reasoning block whose
   recorded binding holds in the request as it will be sent, or that stands in the conversation it was
   handed in, to (``Continuation.plan``); never visible text, ids or digests;
3. else a new execution whose id is the trace id of the call's span.

The step is the ``step()`` scope, else the model-call span id. ``ModelCall`` owns the decision; capture,
the continuation pass (which blobs a request may read back) and the live view all read it from there.
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

from opentelemetry import baggage
from opentelemetry.trace import SpanContext, format_span_id, format_trace_id

from loom_otel.core._context import ExecutionScope

__all__ = ["CallIdentity", "baggage_principal", "decide"]


class CallIdentity(NamedTuple):
    """The execution, step and people a call's captures belong to (a tuple of plain values: built on
    every call, and untracked by the garbage collector once it has seen it)."""

    execution_id: str
    step_id: str
    tenant: str | None
    principal: str | None
    owner: str | None = None
    named_step: bool = False
    """``True`` when the step came from ``step()`` (its attempts are counted); else the span id."""
    named_execution: bool = False
    """``True`` when the execution came from ``execution()`` (rule 1): the application named it."""

    @property
    def scope(self) -> ExecutionScope:
        """The (tenant, execution) whose blobs this call writes and may read back, and its principal
        (a block recorded for another principal is never read back)."""
        return ExecutionScope(self.execution_id, self.tenant, self.principal)


def decide(
    context: SpanContext,
    explicit: ExecutionScope | None,
    lineage: ExecutionScope | None,
    step: str | None,
    baggage_principal: str | None = None,
) -> CallIdentity:
    """The identity of a call whose span has ``context`` (rules 1-3 of the module docstring). The
    principal is the scope's, else ``baggage_principal`` (``LOOM_OTEL_PRINCIPAL_BAGGAGE``)."""
    scope = explicit or lineage
    named = explicit is not None
    if scope is not None:
        execution_id, tenant, principal, owner = scope.execution_id, scope.tenant, scope.principal, scope.owner
    else:
        execution_id = format_trace_id(context.trace_id) if context.is_valid else uuid.uuid4().hex
        tenant = principal = owner = None
    principal = principal or baggage_principal or None
    if step is not None:
        return CallIdentity(execution_id, step, tenant, principal, owner, named_step=True, named_execution=named)
    step_id = format_span_id(context.span_id) if context.is_valid else uuid.uuid4().hex[:16]
    return CallIdentity(execution_id, step_id, tenant, principal, owner, named_execution=named)


def baggage_principal(key: str) -> str | None:
    """The principal the current OpenTelemetry baggage names under ``key`` (``None``: none, or empty)."""
    value = baggage.get_baggage(key)
    return value.strip() or None if isinstance(value, str) else None
