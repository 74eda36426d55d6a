"""Whether a model call's readable reasoning is kept, and where (ADR D1, D3, D7): decided once per call.

In order: loom-otel is off, or the call's store (``Runtime.store_for``: ``execution(store=...)``, else its
tenant's, else the configured one) is none: nothing is kept. Else ``execution(capture=...)`` decides; else
the predicate ``ReasoningConfig(capture=...)``, asked once (one that raises fails the call closed, as a
store that fails); else an execution's or tenant's own store keeps unless capture was set off; else the
configured ``capture``.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_otel.core._calls._identity import CallIdentity
from loom_otel.core._evidence._store._protocol import ReasoningStore
from loom_otel.core._runtime._config import Runtime
from loom_otel.core._runtime._context import ExecutionScope
from loom_otel.core._runtime._hooks import CaptureCall
from loom_otel.core.exceptions import ReasoningCaptureError

__all__ = ["Keeping", "keeping", "keeping_store"]


@dataclass(frozen=True, slots=True)
class Keeping:
    """A call's decision: ``store`` keeps its readable texts (``None``: none is kept); ``declined``: a store
    was there for it and capture said no (``execution(capture=False)``, the predicate, capture off), so
    its reasoning is not shown live either (with no store at all, the live view still streams it and
    tells the viewer that none was kept)."""

    store: ReasoningStore | None
    declined: bool


def keeping(
    runtime: Runtime, identity: CallIdentity, scope: ExecutionScope | None, provider: str, model: str
) -> Keeping:
    """Where this call's readable texts go (module docstring). Raises ``ReasoningCaptureError`` when the
    predicate raises or the call's own store cannot be opened."""
    if not runtime.enabled:
        return Keeping(None, declined=False)
    try:
        if scope is None and runtime.tenant_stores:  # a joined lineage's tenant may have its own store
            scope = identity.scope
        store = runtime.store_for(scope)
    except Exception as exc:
        raise ReasoningCaptureError(
            f"the reasoning store of tenant {identity.tenant!r} could not be opened ({type(exc).__name__}): its "
            "text would not be kept as evidence, so the model call fails closed"
        ) from None
    if store is None:
        return Keeping(None, declined=False)
    if scope is not None and scope.capture is not None:
        keep = scope.capture
    elif runtime.capture_when is not None:
        call = CaptureCall(provider, model, identity.tenant, identity.execution_id, identity.principal)
        try:
            keep = runtime.capture_when(call)
        except Exception as exc:
            raise ReasoningCaptureError(
                f"the capture predicate raised {type(exc).__name__}: whether to keep this call's reasoning is "
                "not known, so the model call fails closed"
            ) from None
    elif store is not runtime.store and not runtime.capture_set:
        keep = True  # its own store: kept, as a configured store is by default
    else:
        keep = bool(runtime.capture)
    return Keeping(store, declined=False) if keep else Keeping(None, declined=True)


def keeping_store(
    runtime: Runtime, identity: CallIdentity, scope: ExecutionScope | None, provider: str, model: str
) -> ReasoningStore | None:
    """The store this call's readable texts go to; ``None``: none is kept (the parts are omitted).
    Raises ``ReasoningCaptureError`` when the predicate raises or the call's own store cannot be opened."""
    return keeping(runtime, identity, scope, provider, model).store
