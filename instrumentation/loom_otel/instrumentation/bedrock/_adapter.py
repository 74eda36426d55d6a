"""Amazon Bedrock Converse as the call skeleton's vendor (``loom_otel.core._calls._adapter.VendorAdapter``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from loom_otel.core import Reasoning
from loom_otel.core.vendor import ModelCall, RequestInfo, ResponseInfo, ResultReaders, Runtime, StreamAccumulator
from loom_otel.instrumentation.bedrock._continuation import BedrockContinuation, Outgoing
from loom_otel.instrumentation.bedrock._extractors import (
    ConverseStreamAccumulator,
    reasonings_of,
    request_id_of,
    request_info,
    response_info,
)
from loom_otel.instrumentation.bedrock._guard import check_converse_request

__all__ = ["BedrockAdapter", "BedrockReaders"]


class BedrockReaders(ResultReaders):
    """A ``converse`` response (a dict), and ``converse_stream``'s: its ``stream`` entry (an
    ``EventStream``) goes back under a stream proxy, the rest of the dict is the application's as it was."""

    def whole(self, call: ModelCall, outgoing: Outgoing | None, response: Any) -> tuple[list[Reasoning], ResponseInfo]:
        if call.request.stream:  # a stream's result without its stream: nothing was received
            return [], response_info({}, call.request)
        body = response if isinstance(response, Mapping) else {}
        return reasonings_of(body, call.request), response_info(body, call.request)

    def accumulator(self, call: ModelCall, result: Any) -> StreamAccumulator:
        return ConverseStreamAccumulator(call.request, request_id_of(result))

    def stream_of(self, result: Any) -> Any | None:
        return result["stream"] if isinstance(result, dict) and "stream" in result else None

    def restream(self, result: Any, proxy: Any) -> Any:
        return {**result, "stream": proxy}


class BedrockAdapter:
    """``converse`` and ``converse_stream`` of boto3 ``bedrock-runtime`` clients (read by
    ``BedrockReaders``)."""

    readers: Final = BedrockReaders()

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
