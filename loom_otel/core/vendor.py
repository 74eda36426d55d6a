"""The vendor face: the objects a vendor adapter implements and calls, one of the two core modules the
instrumentation packages import (the other is ``loom_otel.core.vendor_helpers``, the small helpers).

Each ``loom_otel.instrumentation.<vendor>`` package imports core through these public modules (and the
public ``loom_otel.core`` and ``loom_otel.core.exceptions``), as an OpenTelemetry instrumentation
imports ``opentelemetry.util.genai``: the instrumentor and its wrappers (``sync_method``,
``async_method``, and ``DeferredSend`` for a method that sends later: a vendor never runs the skeleton's
steps itself), the adapter contract (``Outgoing``, ``ResultReaders``: core's one dispatch of what a
method returned, over the vendor's readers), the model call and its records, stream accumulators and
proxies, and the continuation rule's base and types. A name an adapter needs is added here or to the
helpers, never imported from the private module that holds it (an import-linter contract in
``pyproject.toml`` checks it). Nothing in core imports this module.
"""

from __future__ import annotations

from loom_otel.core._calls._adapter import Outgoing, PlannedOutgoing, StreamAccumulator
from loom_otel.core._calls._capture import Capture
from loom_otel.core._calls._handler import ReasoningHandler
from loom_otel.core._calls._instrumentor import ReasoningInstrumentor, Wrap
from loom_otel.core._calls._model_call import ModelCall, RequestInfo, ResponseInfo
from loom_otel.core._calls._raw_streams import Decode
from loom_otel.core._calls._results import ResultReaders
from loom_otel.core._calls._skeleton import DeferredSend, Wrapper, async_method, sync_method
from loom_otel.core._calls._streams import AccumulatorLayer, AsyncStreamProxy, SyncStreamProxy
from loom_otel.core._continuation._bindings import RoundBlock
from loom_otel.core._continuation._rule import Block, Continuation, Header, MessageView, Plan, Produced
from loom_otel.core._runtime._config import Runtime

__all__ = [
    "AccumulatorLayer",
    "AsyncStreamProxy",
    "Block",
    "Capture",
    "Continuation",
    "Decode",
    "DeferredSend",
    "Header",
    "MessageView",
    "ModelCall",
    "Outgoing",
    "Plan",
    "PlannedOutgoing",
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
    "Wrap",
    "Wrapper",
    "async_method",
    "sync_method",
]
