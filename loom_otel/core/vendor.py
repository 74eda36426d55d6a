"""The vendor face: what a vendor adapter may use from core, the one core module the instrumentation
packages import.

Each ``loom_otel.instrumentation.<vendor>`` package imports core through this public module (and the
public ``loom_otel.core`` and ``loom_otel.core.exceptions``), as an OpenTelemetry instrumentation
imports ``opentelemetry.util.genai``: the call skeleton's wrappers and its ``DeferredSend`` (a vendor
never runs the skeleton's steps itself), the adapter contract, the model call and its records, stream
proxies, the request guard's scanner, the continuation rule, the span's message content, GenAI
conventions and the small shared helpers (canonical bytes, SDK field reading, memos). A name an adapter needs
is added here, never imported from the private module that holds it (an import-linter contract
in ``pyproject.toml`` checks it). Nothing in core imports this module.
"""

from __future__ import annotations

from loom_otel.core import _attributes as attr
from loom_otel.core._attributes import AttributeValue
from loom_otel.core._calls._adapter import Outgoing, StreamAccumulator
from loom_otel.core._calls._capture import Capture
from loom_otel.core._calls._content import (
    attach_request,
    content_mode,
    content_part,
    reasoning_input_part,
    text_part,
    tool_call_part,
    tool_response_part,
)
from loom_otel.core._calls._handler import ReasoningHandler
from loom_otel.core._calls._instrumentor import ReasoningInstrumentor, Wrap
from loom_otel.core._calls._model_call import ModelCall, RequestInfo, ResponseInfo, current_call
from loom_otel.core._calls._raw_streams import END_OF_STREAM, Decode, tap_raw_body
from loom_otel.core._calls._results import ResultReaders
from loom_otel.core._calls._skeleton import DeferredSend, Wrapper, active, async_method, finish, sync_method
from loom_otel.core._calls._streams import AccumulatorLayer, AsyncStreamProxy, SyncStreamProxy
from loom_otel.core._calls._withheld import WITHHELD, withhold_from_response, withhold_from_text
from loom_otel.core._canonical import canonical_json, text_bytes, text_of
from loom_otel.core._config import Runtime
from loom_otel.core._context import ExecutionScope, current_execution
from loom_otel.core._continuation._bindings import BlockRecord, RoundBlock, bindings_for
from loom_otel.core._continuation._rehydrate import resolve_text
from loom_otel.core._continuation._rule import (
    UNRESOLVABLE,
    Block,
    Continuation,
    Header,
    MessageView,
    Plan,
    Produced,
    digest_of,
    readable,
    record_digest,
)
from loom_otel.core._guard._requests import DATA_ROLES, check, check_rest, model_fields, present, reasoning_block
from loom_otel.core._guard._requests import Path as GuardPath
from loom_otel.core._layout import LayoutBuilder
from loom_otel.core._memo import BoundedMemo, DigestMemo
from loom_otel.core._semconv import finish_reasons, model_name, request_parameters, server_attributes
from loom_otel.core._shapes import field, is_mapping

__all__ = [
    "AccumulatorLayer",
    "AsyncStreamProxy",
    "AttributeValue",
    "Block",
    "BlockRecord",
    "BoundedMemo",
    "Capture",
    "Continuation",
    "DATA_ROLES",
    "Decode",
    "DeferredSend",
    "DigestMemo",
    "END_OF_STREAM",
    "ExecutionScope",
    "GuardPath",
    "Header",
    "LayoutBuilder",
    "MessageView",
    "ModelCall",
    "Outgoing",
    "Plan",
    "Produced",
    "ReasoningHandler",
    "ReasoningInstrumentor",
    "RequestInfo",
    "ResponseInfo",
    "ResultReaders",
    "RoundBlock",
    "Runtime",
    "StreamAccumulator",
    "SyncStreamProxy",
    "UNRESOLVABLE",
    "WITHHELD",
    "Wrap",
    "Wrapper",
    "active",
    "async_method",
    "attach_request",
    "attr",
    "bindings_for",
    "canonical_json",
    "check",
    "check_rest",
    "content_mode",
    "content_part",
    "current_call",
    "current_execution",
    "digest_of",
    "field",
    "finish",
    "finish_reasons",
    "is_mapping",
    "model_fields",
    "model_name",
    "present",
    "readable",
    "reasoning_block",
    "reasoning_input_part",
    "record_digest",
    "request_parameters",
    "resolve_text",
    "server_attributes",
    "sync_method",
    "tap_raw_body",
    "text_bytes",
    "text_of",
    "text_part",
    "tool_call_part",
    "tool_response_part",
    "withhold_from_response",
    "withhold_from_text",
]
