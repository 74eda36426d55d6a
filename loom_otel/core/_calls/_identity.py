"""Whose a model call is (DESIGN "Execution identity"): decided once per call, in one place.

1. an explicit ``execution()`` scope;
2. else the transcript's lineage: the execution (of no tenant, and named by no ``execution()`` of another
   process) that this process's binding records attribute the request's latest reasoning block whose
   recorded binding holds in the request as it will be sent, or that stands in the conversation it was
   handed in, to (``Continuation.plan``); never visible text, ids or digests;
3. else a new execution whose id is the trace id of the call's span.

The principal is the scope's (``execution(principal=...)``, the trusted source), else, only when
``LOOM_OTEL_PRINCIPAL_BAGGAGE`` names a key, that W3C baggage entry: a caller of the application sets it
unless the application's edge overwrites it (warned once at ``instrument()``), so only a value of at most
``MAX_PRINCIPAL`` printable characters, with no percent-escape left in it, is taken; any other records no
principal (warned once).

The step is the ``step()`` scope, else the model-call span id. ``ModelCall`` owns the decision; capture,
the continuation pass (which blobs a request may read back) and the live view all read it from there.
"""

from __future__ import annotations

import re
import uuid
from typing import Final, NamedTuple

from opentelemetry import baggage
from opentelemetry.trace import SpanContext, format_span_id, format_trace_id

from loom_otel.core import environment_variables as env
from loom_otel.core._runtime._context import ExecutionScope
from loom_otel.core._runtime._warnings import warn

__all__ = ["MAX_PRINCIPAL", "CallIdentity", "baggage_principal", "decide", "warn_of_baggage_principal"]

MAX_PRINCIPAL: Final = 256
"""The longest principal taken from baggage, in characters."""

_ESCAPED: Final = re.compile(r"%[0-9A-Fa-f]{2}")


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


def baggage_principal(key: str | None) -> str | None:
    """The principal the current OpenTelemetry baggage names under ``key`` (``None``: no key configured,
    no entry, an empty one, or one refused: longer than ``MAX_PRINCIPAL``, not printable, or still
    percent-encoded; a refusal warns once)."""
    if key is None:
        return None
    value = baggage.get_baggage(key)
    if not isinstance(value, str) or not (value := value.strip()):
        return None
    if len(value) <= MAX_PRINCIPAL and value.isprintable() and _ESCAPED.search(value) is None:
        return value
    warn(
        f"the baggage entry {key!r} ({env.LOOM_OTEL_PRINCIPAL_BAGGAGE}) is longer than {MAX_PRINCIPAL} "
        "characters, not printable or percent-encoded: the call records no principal (warned once)",
        once=("principal-baggage-refused", key),
    )
    return None


def warn_of_baggage_principal(key: str | None) -> None:
    """At ``instrument()``: with a baggage key configured, say once that a caller sets baggage."""
    if key is None:
        return
    warn(
        f"{env.LOOM_OTEL_PRINCIPAL_BAGGAGE}={key}: a call's principal comes from the W3C baggage entry "
        f"{key!r}, which a caller of the application sends unless the application's edge overwrites it "
        "with the authenticated user (README: Who may read); execution(principal=...) is the trusted source",
        once=("principal-baggage", key),
    )
