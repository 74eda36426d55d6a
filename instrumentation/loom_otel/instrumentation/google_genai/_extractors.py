"""Gemini ``generateContent`` <-> loom-otel: pure functions over request kwargs, responses and chunks.

One rule folds the parts of a call, in arrival order, into ``Reasoning`` items, for complete responses
and stream chunks alike (a complete response is one big chunk), so a streamed call and a complete call
of the same content give equal parts:

- consecutive ``thought: true`` parts are one ``summary`` (their texts joined with nothing between);
- a ``thought_signature`` (bytes, on a thought, a function call, a text or an empty trailing text part)
  signs the latest summary not yet signed; when there is none (thoughts not included, or already signed)
  it gets its own ``summary`` part with empty text: the model reasoned and showed nothing.

Parts of every candidate are folded separately and listed by candidate index.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from loom_otel.core import Reasoning, ReasoningKind
from loom_otel.core.vendor import RequestInfo, ResponseInfo
from loom_otel.core.vendor_helpers import (
    AttributeValue,
    LayoutBuilder,
    attach_request,
    attr,
    content_mode,
    field,
    finish_reasons,
    is_mapping,
    model_name,
    reasoning_input_part,
    request_parameters,
    server_attributes,
    text_part,
    tool_call_part,
    tool_response_part,
)
from loom_otel.instrumentation.google_genai._readable import thinking_settings
from loom_otel.instrumentation.google_genai._transcript import config_value

__all__ = ["ResponseAccumulator", "provider_of", "request_info"]

_OPERATION: Final = "generate_content"
_USAGE: Final = (
    (attr.GEN_AI_USAGE_INPUT_TOKENS, "prompt_token_count"),
    (attr.GEN_AI_USAGE_OUTPUT_TOKENS, "candidates_token_count"),
    (attr.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, "thoughts_token_count"),
    (attr.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, "cached_content_token_count"),
)
"""Usage fields as Gemini names them; the output count the conventions want adds the thoughts to the
candidates (``prompt_token_count`` already includes the cached content)."""
_PARAMETERS: Final = {
    attr.GEN_AI_REQUEST_MAX_TOKENS: "max_output_tokens",
    attr.GEN_AI_REQUEST_TEMPERATURE: "temperature",
    attr.GEN_AI_REQUEST_TOP_P: "top_p",
    attr.GEN_AI_REQUEST_TOP_K: "top_k",
    attr.GEN_AI_REQUEST_STOP_SEQUENCES: "stop_sequences",
    attr.GEN_AI_REQUEST_SEED: "seed",
    attr.GEN_AI_REQUEST_FREQUENCY_PENALTY: "frequency_penalty",
    attr.GEN_AI_REQUEST_PRESENCE_PENALTY: "presence_penalty",
    attr.GEN_AI_REQUEST_CHOICE_COUNT: "candidate_count",
}
_CONTENT_FILTER: Final = "content_filter"
FINISH_REASONS: Final = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": _CONTENT_FILTER,
    "RECITATION": _CONTENT_FILTER,
    "BLOCKLIST": _CONTENT_FILTER,
    "PROHIBITED_CONTENT": _CONTENT_FILTER,
    "SPII": _CONTENT_FILTER,
    "IMAGE_SAFETY": _CONTENT_FILTER,
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
}
"""Gemini ``finishReason`` -> the conventions' finish reason; ``STOP`` after a function call is ``tool_call``."""


def provider_of(instance: Any) -> str:
    """``gcp.vertex_ai`` when the client talks to Vertex AI, else ``gcp.gemini`` (GenAI conventions)."""
    return "gcp.vertex_ai" if getattr(getattr(instance, "_api_client", None), "vertexai", False) else "gcp.gemini"


def request_info(instance: Any, kwargs: Mapping[str, Any], *, stream: bool, readable: bool = False) -> RequestInfo:
    """What the span says at start; ``readable``: loom-otel asks for the thoughts the application did
    not ask for (``LOOM_OTEL_REQUEST_READABLE``)."""
    attributes: dict[str, AttributeValue] = {}
    options = getattr(getattr(instance, "_api_client", None), "_http_options", None)
    server_attributes(getattr(options, "base_url", None), attributes)
    config = kwargs.get("config")
    if config is not None:
        value_of = _reader(config)
        request_parameters(value_of, _PARAMETERS, attributes)
        output_type = _output_type(value_of)
        if output_type is not None:
            attributes[attr.GEN_AI_OUTPUT_TYPE] = output_type
    model = kwargs.get("model")
    hints: dict[str, object] = {}
    mode = content_mode()
    if mode != "NO_CONTENT":
        attach_request(
            mode,
            system=_system(config_value(config, "system_instruction")) if config is not None else None,
            messages=_contents(kwargs.get("contents")),
            tools=_tools(config_value(config, "tools")) if config is not None else None,
            attributes=attributes,
            hints=hints,
        )
    return RequestInfo(
        provider=provider_of(instance),
        operation=_OPERATION,
        model=model_name(model),
        stream=stream,
        attributes=attributes,
        hints=hints,
        thinking=thinking_settings(config, readable=readable),
    )


# --- message content (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT) -------------------------


def _part(part: Any, *, answer: bool = False) -> list[dict[str, Any]]:
    """One Gemini part as convention parts; an answer's thoughts are left out (added by reference)."""
    if isinstance(part, str):
        return [text_part(part)]
    signature = field(part, "thought_signature") or field(part, "thoughtSignature")
    if field(part, "thought"):
        return [] if answer else [reasoning_input_part(field(part, "text"), signature)]
    found = [] if answer or not signature else [reasoning_input_part(None, signature)]
    call = field(part, "function_call") or field(part, "functionCall")
    response = field(part, "function_response") or field(part, "functionResponse")
    text = field(part, "text")
    if call is not None:
        found.append(tool_call_part(field(call, "id"), field(call, "name"), field(call, "args")))
    elif response is not None:
        found.append(tool_response_part(field(response, "id") or field(response, "name"), field(response, "response")))
    elif isinstance(text, str):
        found.append(text_part(text))
    elif field(part, "inline_data") is not None or field(part, "inlineData") is not None:
        found.append({"type": "blob"})
    elif field(part, "file_data") is not None or field(part, "fileData") is not None:
        found.append({"type": "file"})
    return found


def _parts(parts: Any, *, answer: bool = False) -> list[dict[str, Any]]:
    found = [p for part in parts or () for p in _part(part, answer=answer)]
    merged: list[dict[str, Any]] = []
    for part in found:  # stream chunks split one text into many parts
        if part["type"] == "text" and merged and merged[-1]["type"] == "text":
            merged[-1] = text_part(merged[-1]["content"] + part["content"])
        else:
            merged.append(part)
    return merged


def _role(role: Any) -> str:
    return "assistant" if role == "model" else str(role or "user")


def _contents(contents: Any) -> list[dict[str, Any]]:
    items = contents if isinstance(contents, list | tuple) else [] if contents is None else [contents]
    messages: list[dict[str, Any]] = []
    loose: list[Any] = []
    for item in items:
        if not isinstance(item, str) and field(item, "parts") is not None:
            if loose:
                messages.append({"role": "user", "parts": _parts(loose)})
                loose = []
            messages.append({"role": _role(field(item, "role")), "parts": _parts(field(item, "parts"))})
        else:
            loose.append(item)
    if loose:
        messages.append({"role": "user", "parts": _parts(loose)})
    return messages


def _system(system: Any) -> list[dict[str, Any]] | None:
    if system is None:
        return None
    if isinstance(system, str):
        return [text_part(system)]
    parts = field(system, "parts")
    return _parts(parts if parts is not None else system if isinstance(system, list | tuple) else [system])


def _tools(tools: Any) -> list[dict[str, Any]] | None:
    found: list[dict[str, Any]] = []
    for tool in tools or ():
        if callable(tool) and not hasattr(tool, "model_dump"):
            doc = (tool.__doc__ or "").strip() or None
            found.append({"type": "function", "name": getattr(tool, "__name__", ""), "description": doc})
            continue
        for declaration in field(tool, "function_declarations") or field(tool, "functionDeclarations") or ():
            parameters = field(declaration, "parameters")
            if hasattr(parameters, "model_dump"):
                parameters = parameters.model_dump(exclude_none=True, mode="json")
            found.append(
                {
                    "type": "function",
                    "name": field(declaration, "name"),
                    "description": field(declaration, "description"),
                    "parameters": parameters,
                }
            )
    return found or None


def _reader(config: Any) -> Callable[[str], Any]:
    """``config_value`` for one config: an SDK config's fields are its attributes, read directly. A
    pydantic config (the SDK's ``GenerateContentConfig``) keeps every field's value in its ``__dict__``:
    its ``get`` reads one without a Python frame or pydantic's attribute hook (a dozen names per call)."""
    if is_mapping(config):
        return lambda name: config_value(config, name)
    values = getattr(config, "__dict__", None) if hasattr(config, "model_fields_set") else None
    if type(values) is dict:
        return values.get
    return lambda name: getattr(config, name, None)


def _output_type(value_of: Callable[[str], Any]) -> str | None:
    """``json`` for a JSON response MIME type or schema, ``text`` for ``text/plain``."""
    mime = value_of("response_mime_type")
    if mime == "application/json" or value_of("response_schema") is not None:
        return "json"
    if value_of("response_json_schema") is not None:
        return "json"
    return "text" if mime == "text/plain" else None


def resumes(kwargs: Mapping[str, Any]) -> bool:
    """The request continues an earlier hop of the same generation (automatic continuation)."""
    return bool(config_value(kwargs.get("config"), "continuation_token"))


class _Summary:
    __slots__ = ("candidate", "index", "signature", "texts")

    def __init__(self, candidate: int, index: int) -> None:
        self.candidate = candidate
        self.index = index
        self.texts: list[str] = []
        self.signature: bytes | None = None


class _Fold:
    """The parts of one candidate, folded by the module rule."""

    __slots__ = ("layout", "open", "unsigned")

    def __init__(self) -> None:
        self.open: _Summary | None = None
        self.unsigned: _Summary | None = None
        self.layout: list[_Summary | tuple[Any, ...] | None] = []
        """The candidate's layout in arrival order: a summary, a function call's (id, name, args), or
        ``None`` for answer text."""


class ResponseAccumulator:
    """Rebuilds a call's reasoning from its responses: every hop of a complete call (automatic function
    calling, automatic continuation), or every chunk of a streamed one. Also a ``StreamAccumulator``."""

    def __init__(self, request: RequestInfo) -> None:
        self._request = request
        self._summaries: list[_Summary] = []
        self._folds: dict[int, _Fold] = {}
        self._banked: dict[str, int] = {}
        self._usage: Any = None
        self._response_id: str | None = None
        self._model: str | None = None
        self._finish_reasons: list[str] = []
        self._tool_calls: set[int] = set()
        """Candidates that produced a function call (their ``STOP`` is a ``tool_call``)."""
        self.hops = 0
        self.produced: list[Any] = []
        """Every part of candidate 0, every hop, in arrival order (what the continuation layer records)."""
        self.text_deltas: list[tuple[int, str]] | None = None
        """Set by a stream whose live view carries text: ``feed`` then appends the answer text of each
        non-thought part as (candidate index, text)."""

    def begin_hop(self, resuming: bool) -> None:
        """A new HTTP request of this call. Usage is summed over requests, except that streamed chunks
        of a resumed generation already count the hops before it (the SDK merges them)."""
        self.hops += 1
        self._tool_calls.clear()
        if self._usage is not None and not (resuming and self._request.stream):
            for _, name in _USAGE:
                value = getattr(self._usage, name, None)
                if isinstance(value, int):
                    self._banked[name] = self._banked.get(name, 0) + value
            self._usage = None

    def feed(self, response: Any) -> Sequence[tuple[int, str]]:
        """Take one response or chunk; return the thought text it carried as (part index, text)."""
        deltas: list[tuple[int, str]] = []
        finish: list[str] = []
        for candidate in getattr(response, "candidates", None) or ():
            number = candidate.index or 0
            content = candidate.content
            parts = getattr(content, "parts", None) if content is not None else None
            if parts:
                if self._fold(number, parts, deltas):
                    self._tool_calls.add(number)
                if number == 0:
                    self.produced.extend(parts)
            if candidate.finish_reason is not None:
                reason = str(getattr(candidate.finish_reason, "value", candidate.finish_reason))
                (normal,) = finish_reasons([reason], FINISH_REASONS)
                finish.append("tool_call" if normal == "stop" and number in self._tool_calls else normal)
        if finish:
            self._finish_reasons = finish
        usage = getattr(response, "usage_metadata", None)
        if usage is not None:
            self._usage = usage
        if getattr(response, "response_id", None):
            self._response_id = response.response_id
        if getattr(response, "model_version", None):
            self._model = response.model_version
        return deltas

    def _fold(self, number: int, parts: Sequence[Any], deltas: list[tuple[int, str]]) -> bool:
        """Fold one candidate's parts; ``True`` when one of them is a function call (in the same pass: a
        streamed call folds every chunk)."""
        fold = self._folds.get(number)
        if fold is None:
            fold = self._folds[number] = _Fold()
        calls = False
        for part in parts:
            call = part.function_call
            if part.thought:
                summary = fold.open
                if summary is None:
                    summary = fold.open = fold.unsigned = self._new(number, fold)
                if part.text:
                    summary.texts.append(part.text)
                    deltas.append((summary.index, part.text))
                if part.thought_signature:
                    self._sign(number, fold, part.thought_signature)
                continue
            fold.open = None
            if part.thought_signature:  # before the part it rides on: the reasoning preceded it
                self._sign(number, fold, part.thought_signature)
            if part.text:
                fold.layout.append(None)
                if self.text_deltas is not None:
                    self.text_deltas.append((number, part.text))
            if call is not None:
                calls = True
                fold.layout.append((call.id, call.name, call.args))
        return calls

    def _new(self, number: int, fold: _Fold) -> _Summary:
        summary = _Summary(number, len(self._summaries))
        self._summaries.append(summary)
        fold.layout.append(summary)
        return summary

    def _sign(self, number: int, fold: _Fold, signature: bytes) -> None:
        target = fold.unsigned
        if target is None or target.signature is not None:
            target = self._new(number, fold)
        target.signature = signature
        fold.unsigned = None

    def result(self) -> tuple[list[Reasoning], ResponseInfo]:
        provider = self._request.provider
        ordered = sorted(self._summaries, key=lambda s: (s.candidate, s.index))
        reasonings = [
            Reasoning(ReasoningKind.SUMMARY, provider, text="".join(s.texts), signature=s.signature) for s in ordered
        ]
        return reasonings, self._response_info()

    def _output_messages(self) -> list[dict[str, Any]]:
        message: dict[str, Any] = {"role": "assistant", "parts": _parts(self.produced, answer=True)}
        if self._finish_reasons:
            message["finish_reason"] = self._finish_reasons[0]
        return [message]

    def _response_info(self) -> ResponseInfo:
        attributes: dict[str, AttributeValue] = {}
        if self._response_id:
            attributes[attr.GEN_AI_RESPONSE_ID] = self._response_id
        if self._finish_reasons:
            attributes[attr.GEN_AI_RESPONSE_FINISH_REASONS] = tuple(self._finish_reasons)
        usage, banked = self._usage, self._banked
        for key, name in _USAGE:
            value = getattr(usage, name, None)  # ``None`` without usage
            if banked and name in banked:  # several requests (automatic function calling): their counts added
                attributes[key] = banked[name] + (value if isinstance(value, int) else 0)
            elif isinstance(value, int):
                attributes[key] = value
        thoughts = attributes.get(attr.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS)
        output = attributes.get(attr.GEN_AI_USAGE_OUTPUT_TOKENS)
        if isinstance(thoughts, int):
            attributes[attr.GEN_AI_USAGE_OUTPUT_TOKENS] = thoughts + (output if isinstance(output, int) else 0)
        content = self._output_messages()  # recorded with content capture on; the scrubber reads it always
        return ResponseInfo(model=self._model, attributes=attributes, output_messages=content, layout=self._layout())

    def _layout(self) -> tuple[str, ...]:
        """Every candidate's layout, by candidate index; parts numbered as ``result`` orders them."""
        ordered = sorted(self._summaries, key=lambda s: (s.candidate, s.index))
        position = {id(summary): number for number, summary in enumerate(ordered)}
        layout = LayoutBuilder()
        for _, fold in sorted(self._folds.items()):
            for entry in fold.layout:
                if entry is None:
                    layout.text()
                elif isinstance(entry, _Summary):
                    layout.reasoning(position[id(entry)])
                else:
                    layout.tool_call(*entry)
        return layout.entries()
