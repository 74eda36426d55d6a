"""Amazon Bedrock Converse as the call skeleton's vendor (``loom_otel.core._calls._adapter.VendorAdapter``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loom_otel.core.vendor import ModelCall, RequestInfo, Runtime, SyncStreamProxy, finish
from loom_otel.instrumentation.bedrock._continuation import BedrockContinuation, Outgoing
from loom_otel.instrumentation.bedrock._extractors import (
    ConverseStreamAccumulator,
    reasonings_of,
    request_id_of,
    request_info,
    response_info,
)
from loom_otel.instrumentation.bedrock._guard import check_converse_request

__all__ = ["BedrockAdapter"]


class BedrockAdapter:
    """``converse`` and ``converse_stream`` of boto3 ``bedrock-runtime`` clients. The stream is the
    ``stream`` entry of what ``converse_stream`` returns (an ``EventStream``): it goes back under a
    ``SyncStreamProxy``; the rest of the dict is the application's as it was."""

    def __init__(self, runtime: Runtime) -> None:
        self.continuation = BedrockContinuation(runtime) if runtime.enabled else None

    def check_request(self, instance: Any, kwargs: Mapping[str, Any]) -> None:
        check_converse_request(kwargs)

    def prepare(self, instance: Any, kwargs: dict[str, Any]) -> Outgoing | None:
        return None if self.continuation is None else self.continuation.prepare(kwargs)

    def streams(self, kwargs: Mapping[str, Any]) -> bool:
        return False  # the operation name says it (``_wrappers.make_api_call`` starts the call itself)

    def request_info(self, instance: Any, kwargs: Mapping[str, Any], *, stream: bool) -> RequestInfo:
        return request_info(instance, kwargs, stream=stream)

    def sync_result(self, call: ModelCall, outgoing: Outgoing | None, result: Any) -> Any:
        if call.request.stream:
            if isinstance(result, dict) and "stream" in result:
                accumulator = ConverseStreamAccumulator(call.request, request_id_of(result))
                return {**result, "stream": SyncStreamProxy(result["stream"], call, outgoing, accumulator)}
            finish(call, outgoing, result, [], response_info({}, call.request))
            return result
        response = result if isinstance(result, Mapping) else {}
        finish(call, outgoing, result, reasonings_of(response, call.request), response_info(response, call.request))
        return result

    async def async_result(self, call: ModelCall, outgoing: Outgoing | None, result: Any) -> Any:
        return self.sync_result(call, outgoing, result)  # botocore has no async client
