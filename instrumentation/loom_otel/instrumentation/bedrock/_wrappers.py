"""The wrapt wrapper of ``botocore.client.BaseClient._make_api_call``, through which every generated
client method sends (boto3 builds client classes at run time, so their methods cannot be wrapped at
import). Only ``Converse`` and ``ConverseStream`` of ``bedrock-runtime`` clients are model calls; the
operation name, not the arguments, says whether the answer streams, so the wrapper sends through a
``DeferredSend`` told whether it streams."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from loom_otel.core.vendor import DeferredSend, ReasoningHandler, Wrapper

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
        if stream is None or not isinstance(params, dict) or _service(instance) != _SERVICE:
            return wrapped(*args, **kwargs)
        deferred = DeferredSend.open(handler, instance, params, wrapped)
        if deferred is None:
            return wrapped(*args, **kwargs)
        return deferred.send(lambda: deferred.sdk(operation, deferred.kwargs), stream=stream)

    return traced_method
