"""The small helpers a vendor adapter calls, beside the vendor face (``loom_otel.core.vendor``, the
objects an adapter implements and calls): the request guard's scanner, the span's message content and
GenAI conventions, the continuation rule's digests and readers, canonical bytes, SDK field reading, memos,
and what withholding leaves in the application's copy. An instrumentation package imports core through
these two modules (and the public ``loom_otel.core`` and ``loom_otel.core.exceptions``); a name a vendor
needs is added here or there, never imported from the private module that holds it (an import-linter
contract in ``pyproject.toml`` checks it). Nothing in core imports this module.
"""

from __future__ import annotations

from loom_otel.core._calls._content import (
    attach_request,
    content_mode,
    content_part,
    reasoning_input_part,
    text_part,
    tool_call_part,
    tool_response_part,
)
from loom_otel.core._calls._model_call import current_call
from loom_otel.core._calls._raw_streams import END_OF_STREAM
from loom_otel.core._calls._semconv import finish_reasons, model_name, request_parameters, server_attributes
from loom_otel.core._calls._skeleton import active
from loom_otel.core._calls._withheld import WITHHELD, withhold_from_text
from loom_otel.core._continuation._bindings import BlockRecord, bindings_for
from loom_otel.core._continuation._rehydrate import resolve_text
from loom_otel.core._continuation._rule import UNRESOLVABLE, digest_of, readable, record_digest
from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._evidence._attributes import AttributeValue
from loom_otel.core._evidence._canonical import canonical_json, text_bytes, text_of
from loom_otel.core._evidence._layout import LayoutBuilder
from loom_otel.core._guard._requests import DATA_ROLES, check, check_rest, model_fields, present, reasoning_block
from loom_otel.core._guard._requests import Path as GuardPath
from loom_otel.core._runtime._context import ExecutionScope, current_execution
from loom_otel.core._runtime._memo import BoundedMemo, DigestMemo
from loom_otel.core._runtime._shapes import field, is_mapping

__all__ = [
    "AttributeValue",
    "BlockRecord",
    "BoundedMemo",
    "DATA_ROLES",
    "DigestMemo",
    "END_OF_STREAM",
    "ExecutionScope",
    "GuardPath",
    "LayoutBuilder",
    "UNRESOLVABLE",
    "WITHHELD",
    "active",
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
    "text_bytes",
    "text_of",
    "text_part",
    "tool_call_part",
    "tool_response_part",
    "withhold_from_text",
]
