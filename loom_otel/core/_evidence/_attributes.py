"""Event names and attribute keys: the one schema shared by span events, journal records and readers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

AttributeValue = str | bool | int | float | Sequence[str] | Sequence[bool] | Sequence[int] | Sequence[float]
"""What an OpenTelemetry attribute (and a journal record's attribute) may hold."""

# Events on the model-call span.
EVENT_CAPTURED: Final = "loom.reasoning.captured"
EVENT_DROPPED: Final = "loom.reasoning.dropped"
EVENT_RESTORED: Final = "loom.reasoning.restored"
EVENT_VENDOR_DROPPED: Final = "loom.reasoning.vendor_dropped"
EVENT_KEPT: Final = "loom.reasoning.kept"
"""A block the drop rule would drop, sent as the application holds it (never worse than bare)."""
EVENT_CHECKPOINT: Final = "loom.audit.checkpoint"
EVENT_READ: Final = "loom.reasoning.read"
"""A read of captured reasoning through ``loom-otel serve`` (the viewer's own journal origin)."""

# Journal record types.
RECORD_CAPTURE: Final = "capture"
RECORD_CHECKPOINT: Final = "checkpoint"
RECORD_READ: Final = "read"
RECORD_ERASURE: Final = "erasure"
"""A tombstone: one execution's reasoning was erased (DESIGN "Reading and erasure")."""

# Tombstone fields (with ``loom.execution.id`` and ``loom.tenant``; the record's ``time`` is the erasure's).
ERASURE_SCOPE: Final = "loom.erasure.scope"
"""What was selected: ``execution``, ``older-than 30d``, ``before 2026-01-01T00:00:00Z``, ``retention 30d``."""
ERASURE_BY: Final = "loom.erasure.by"
"""Who asked (the operating-system user and the command), or which policy."""
ERASURE_REASON: Final = "loom.erasure.reason"
"""``request`` (a person asked) or ``retention`` (a policy expired it), or the caller's word."""
AUDIT_LOCAL: Final = "loom.audit.local"
"""``true`` on a record its writer keeps in the journal only (a read by ``loom-otel serve`` without
``--forward``, a tombstone of ``loom-otel erase``/``retain``): ``verify --against`` expects an origin of
such records only in the journal, not in the collector's archive."""

# Capture fields (event and record).
EXECUTION_ID: Final = "loom.execution.id"
STEP_ID: Final = "loom.step.id"
ATTEMPT: Final = "loom.attempt"
TENANT: Final = "loom.tenant"
PART_KIND: Final = "loom.reasoning.part.kind"
PART_REF: Final = "loom.reasoning.part.ref"
PART_DIGEST: Final = "loom.reasoning.part.digest"
PART_SIZE: Final = "loom.reasoning.part.size"
PART_OMITTED: Final = "loom.reasoning.part.omitted"
LAYOUT: Final = "loom.reasoning.layout"
"""The response's reasoning parts, text blocks and tool calls in vendor order (``core._evidence._layout``)."""
PRINCIPAL: Final = "loom.principal"
"""Who asked (``execution(principal=...)``, else the baggage key ``LOOM_OTEL_PRINCIPAL_BAGGAGE``)."""
OWNER: Final = "loom.owner"
REASONING_URL: Final = "loom.reasoning.url"
"""The viewer's page of the call (``LOOM_OTEL_VIEWER_URL``), on the capture event and the span."""

# Read record fields (``loom.reasoning.read``): who read which part of which execution, and the outcome.
READ_READER: Final = "loom.read.reader"
READ_REF: Final = "loom.read.ref"
READ_DIGEST: Final = "loom.read.digest"
READ_OUTCOME: Final = "loom.read.outcome"

# Where a capture was made (capture record fields the lead adds in ``capture``): the model-call span's
# trace and span ids (hex) and whether it was sampled, so a record resent from the journal joins its trace.
CALL_TRACE_ID: Final = "loom.call.trace_id"
CALL_SPAN_ID: Final = "loom.call.span_id"
CALL_SAMPLED: Final = "loom.call.sampled"

# The request's thinking settings as the application sent them (span, event and record; each only where
# the request set it), and ``summarized`` where loom-otel asked the vendor for readable reasoning the
# application did not ask for (``LOOM_OTEL_REQUEST_READABLE``).
REQUEST_THINKING_TYPE: Final = "loom.request.thinking.type"
REQUEST_THINKING_BUDGET: Final = "loom.request.thinking.budget"
REQUEST_THINKING_DISPLAY: Final = "loom.request.thinking.display"
REQUEST_THINKING_EFFORT: Final = "loom.request.thinking.effort"
REQUEST_THINKING_INCLUDE_THOUGHTS: Final = "loom.request.thinking.include_thoughts"
REQUEST_READABLE: Final = "loom.request.readable"

# Chain fields (event only; the record holds them as top-level keys).
AUDIT_ORIGIN: Final = "loom.audit.origin"
AUDIT_SEQ: Final = "loom.audit.seq"
AUDIT_PREV: Final = "loom.audit.prev"
AUDIT_HASH: Final = "loom.audit.hash"
AUDIT_TYPE: Final = "loom.audit.type"

# Model-call span fields of loom-otel's own.
STREAM_OUTCOME: Final = "loom.stream.outcome"
"""How a stream ended without its vendor end: ``closed_early`` (closed by the application), ``abandoned``
(dropped unclosed)."""

# Continuation event fields.
DROP_REASON: Final = "loom.reasoning.drop.reason"
DROP_COUNT: Final = "loom.reasoning.drop.count"
DROP_POSITIONS: Final = "loom.reasoning.drop.positions"
KEPT_BECAUSE: Final = "loom.reasoning.kept.because"
"""``vendor_drops`` (the request lets the vendor drop stale blocks) or ``tool_round`` (a vendor rule needs it)."""
RESTORE_KIND: Final = "loom.reasoning.restore.kind"
RESTORE_COUNT: Final = "loom.reasoning.restore.count"
RESTORE_POSITIONS: Final = "loom.reasoning.restore.positions"

# GenAI semantic conventions (development status) used on the model-call span.
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_STREAM: Final = "gen_ai.request.stream"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
OPENINFERENCE_REASONING_TOKENS: Final = "llm.token_count.completion_details.reasoning"
"""The same count under the name Arize Phoenix's token breakdown reads (OpenInference): Phoenix maps the
GenAI conventions' input, output and cache tokens, not the reasoning tokens."""
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
ERROR_TYPE: Final = "error.type"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_REQUEST_TOP_P: Final = "gen_ai.request.top_p"
GEN_AI_REQUEST_TOP_K: Final = "gen_ai.request.top_k"
GEN_AI_REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
GEN_AI_REQUEST_SEED: Final = "gen_ai.request.seed"
GEN_AI_REQUEST_FREQUENCY_PENALTY: Final = "gen_ai.request.frequency_penalty"
GEN_AI_REQUEST_PRESENCE_PENALTY: Final = "gen_ai.request.presence_penalty"
GEN_AI_REQUEST_CHOICE_COUNT: Final = "gen_ai.request.choice.count"
GEN_AI_OUTPUT_TYPE: Final = "gen_ai.output.type"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"

# GenAI client metrics.
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.operation.time_to_first_chunk"
