"""The wrapt wrapper of ``botocore.client.BaseClient._make_api_call``, through which every generated
client method sends (boto3 builds client classes at run time, so their methods cannot be wrapped at
import). Only ``Converse`` and ``ConverseStream`` of ``bedrock-runtime`` clients are model calls; the
operation name, not the arguments, says whether the answer streams, so the wrapper runs the skeleton's
steps itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from loom_otel.core._adapter_kit import (
    ReasoningHandler,
    Wrapper,
    active,
    delivered,
    prepare,
    sending,
    sent,
    start,
    without_peers,
)

__all__ = ["make_api_call"]

_SERVICE: Final = "bedrock-runtime"
_OPERATIONS: Final = {"Converse": False, "ConverseStream": True}
"""Operation name -> whether its answer is a stream."""


def _service(instance: Any) -> object:
    return getattr(getattr(getattr(instance, "meta", None), "service_model", None), "service_name", None)


def make_api_call(handler: ReasoningHandler) -> Wrapper:
    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        operation = args[0] if args else kwargs.get("operation_name")
        params = args[1] if len(args) > 1 else kwargs.get("api_params")
        stream = _OPERATIONS.get(operation) if isinstance(operation, str) else None
        if stream is None or not isinstance(params, dict) or not active(handler) or _service(instance) != _SERVICE:
            return wrapped(*args, **kwargs)
        outgoing = prepare(handler, instance, params)
        call = start(handler, instance, params, outgoing, stream=stream, wrapped=wrapped)
        with sending(call, outgoing):
            result = without_peers(wrapped)(operation, sent(params, outgoing))
        return handler.adapter.sync_result(call, outgoing, delivered(call, outgoing, result))

    return traced_method
