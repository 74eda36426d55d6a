"""Reasoning scrubbing of everyone's telemetry (DESIGN "Telemetry citizenship").

Other instrumentations (the anthropic SDK's content mode, OpenInference, OpenLLMetry, pydantic-ai,
google-adk) put reasoning text and signatures on their spans, span events and log records. With
loom-otel installed these are replaced, before any exporter sees them, by the reference and digest
loom-otel captured, or by a removal marker where it captured none. Two rules, applied to every string
attribute value, event attribute, log body and log attribute:

- **Known texts.** Every text and signature loom-otel captures is remembered (a bounded registry of
  the most recent ones, in memory only) with its replacement; a value that holds one, raw or JSON-escaped,
  gets the replacement instead.
- **Reasoning shapes.** A JSON value (the conventions' ``gen_ai.*.messages``, OpenInference's
  ``input.value`` / ``output.value``) is read and every reasoning part in it (``{"type": "reasoning"}``,
  Anthropic ``thinking`` / ``redacted_thinking`` blocks, Gemini ``thought`` parts and thought signatures,
  OpenAI reasoning items and ``reasoning_content``) has its text and signature replaced; so do
  OpenInference's flattened ``message_content`` attributes of type ``reasoning``. This also covers what
  loom-otel has not seen yet (an instrumentation wrapped inside loom-otel ends its span before loom-otel
  captures) and what it never saw (another process).

Where it sits: ``ReasoningScrubber`` is a span processor whose ``_on_ending`` hook (OpenTelemetry SDK
1.34+) rewrites the ending span in place before *any* processor's ``on_end``, so it works whatever
processors and exporters the user registered, in any order. On an older SDK it rewrites in ``on_end``
and must be the first processor (``install_scrubber`` puts it first). ``ReasoningLogScrubber`` is the
log-record processor twin (logs have no ``on_ending``: it must run first, and ``install_scrubber``
puts it first).
"""

from __future__ import annotations

import base64
import bisect
import json
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import Span

from loom_otel.core._model import Reasoning, ReasoningPart

__all__ = [
    "REMOVED",
    "ReasoningLogScrubber",
    "ReasoningScrubber",
    "install_scrubber",
    "marker",
    "reference_of",
    "remember",
    "scrub_value",
    "sight",
]

REMOVED: Final = "[reasoning removed by loom-otel]"
"""What a reasoning text or signature loom-otel has no reference for becomes."""
_MIN_NEEDLE: Final = 8
"""Texts shorter than this are not searched for inside larger values (they are still replaced where a
reasoning shape holds them)."""
_MAX_ENTRIES: Final = 4096
_MAX_TRACES: Final = 1024
"""How many of the newest traces keep their secrets for the search inside larger values."""
_UNTRACED_SEARCH: Final = 4
_OWN_SCOPE: Final = "loom_otel"
_TEXT_TYPES: Final = frozenset({"reasoning", "thinking"})
_SIGNATURE_KEYS: Final = frozenset({"signature", "thought_signature", "thoughtSignature", "encrypted_content", "data"})
_FLAT_TYPE: Final = ".message_content.type"
_FLAT_FIELDS: Final = ("text", "signature", "data")
_SECRET_NAMES: Final = frozenset(
    {"signature", "reasoning_signature", "thought_signature", "thoughtSignature", "encrypted_content"}
)
"""Attribute (last segment) and JSON key names that only ever hold a reasoning signature."""


class _Needles:
    """The secrets of one trace as searched for inside larger values: (needle, replacement), longest
    first, JSON-escaped forms included, with minus each length (ascending) to skip those too long.
    Built on the first search after a change (most traces are never searched); the built pair is
    replaced in one assignment, so a concurrent search never sees pairs and lengths that disagree."""

    __slots__ = ("built", "secrets", "stale")

    def __init__(self) -> None:
        self.secrets: dict[str, str] = {}
        self.built: tuple[tuple[tuple[str, str], ...], list[int]] = ((), [])
        self.stale = False

    def add(self, secret: str, replacement: str) -> None:
        self.secrets[secret] = replacement
        self.stale = True

    def fitting(self, length: int) -> Sequence[tuple[str, str]]:
        if self.stale:
            self.stale = False
            found: dict[str, str] = {}
            for secret, replacement in list(self.secrets.items()):
                found[secret] = replacement
                for ascii_only in (True, False):
                    found.setdefault(json.dumps(secret, ensure_ascii=ascii_only)[1:-1], replacement)
            pairs = tuple(sorted(found.items(), key=lambda item: -len(item[0])))
            self.built = (pairs, [-len(needle) for needle, _ in pairs])
        pairs, lengths = self.built
        return pairs[bisect.bisect_left(lengths, -length) :]


_Kept = tuple[str | None, str | None, int]
"""What replaces a captured text or signature: its part's (ref, digest, size); ref and digest ``None``
where nothing readable was kept. Plain values only: entries of the registry (up to ``_MAX_ENTRIES``,
held for long) are tuples the garbage collector stops tracking."""
_Capture = tuple[Any, ...]
"""One call's capture as ``remember`` queues it, flat: the trace id, then text, signature, ref, digest and
size of each part (one tuple however many parts: the queue holds up to ``_MAX_ENTRIES`` for long)."""
_PIECE: Final = 5


class _Registry:
    """Recently captured texts and signatures -> their replacement, bounded, in memory only.

    Exact values are looked up among the newest ``_MAX_ENTRIES`` of all traces; the search inside larger
    values uses only the secrets captured in the same trace (the newest ``_MAX_TRACES`` traces), which is
    where other instrumentations put the text of a call as free text (its own span, its parent's, their
    log records), and keeps the cost of a span independent of how much was captured elsewhere."""

    def __init__(self, limit: int = _MAX_ENTRIES, traces: int = _MAX_TRACES) -> None:
        self._limit = limit
        self._traces_limit = traces
        self._lock = threading.Lock()
        self._exact: OrderedDict[str, tuple[str, str | None, str | None, int]] = OrderedDict()
        """Secret -> (replacement, *``_Kept``)."""
        self._traces: OrderedDict[int, _Needles] = OrderedDict()
        self._captured: deque[_Capture] = deque(maxlen=limit)
        """Captures not entered yet: ``remember`` only appends here (a model call pays for no more); the
        first question asked of the registry enters them, oldest first."""

    def captured(self, capture: _Capture) -> None:
        self._captured.append(capture)  # atomic: no lock on the model call's path

    def _enter_captured(self) -> None:
        captured = self._captured
        while captured:
            try:
                capture = captured.popleft()
            except IndexError:  # another thread entered the last one
                return
            trace_id: int = capture[0]
            for i in range(1, len(capture), _PIECE):
                text, signature, ref, digest, size = capture[i : i + _PIECE]
                if text:
                    self.add(text, marker(ref, digest, size, "text"), (ref, digest, size), trace_id)
                if signature:
                    for form in _signature_forms(signature):
                        self.add(form, marker(ref, digest, size, "signature"), (ref, digest, size), trace_id)

    def add(self, secret: str, replacement: str, kept: _Kept, trace_id: int) -> None:
        with self._lock:
            self._exact[secret] = (replacement, *kept)
            self._exact.move_to_end(secret)
            while len(self._exact) > self._limit:
                self._exact.popitem(last=False)
            if len(secret) < _MIN_NEEDLE or not trace_id:
                return
            needles = self._traces.get(trace_id)
            if needles is None:
                needles = self._traces[trace_id] = _Needles()
                while len(self._traces) > self._traces_limit:
                    self._traces.popitem(last=False)
            needles.add(secret, replacement)

    def get(self, value: str) -> str | None:
        if self._captured:
            self._enter_captured()
        found = self._exact.get(value)
        return found[0] if found is not None else None

    def reference(self, value: str) -> tuple[str, str | None, str | None, int] | None:
        if self._captured:
            self._enter_captured()
        return self._exact.get(value)

    def needles(self, trace_id: int | None, length: int) -> Sequence[tuple[str, str]]:
        """The needles of ``trace_id`` that fit in a value of ``length`` characters, longest first; for
        a record outside any trace (some instrumentations log after their span), those of the newest
        ``_UNTRACED_SEARCH`` traces."""
        if self._captured:
            self._enter_captured()
        if trace_id:
            needles = self._traces.get(trace_id)
            return needles.fitting(length) if needles is not None else ()
        with self._lock:
            recent = list(self._traces.values())[-_UNTRACED_SEARCH:]
        return [pair for needles in reversed(recent) for pair in needles.fitting(length)]

    def has_traces(self) -> bool:
        return bool(self._traces or self._captured)

    def clear(self) -> None:
        with self._lock:
            self._captured.clear()
            self._exact.clear()
            self._traces.clear()


_registry = _Registry()


def marker(ref: str | None, digest: str | None, size: int, what: str) -> str:
    """What replaces a captured text (``what="text"``) or signature: its reference, digest and size, or
    the removal marker where nothing readable was kept."""
    if ref:
        return f"[loom-otel reasoning {what} ref={ref} digest={digest} size={size}]"
    return REMOVED


def _signature_forms(signature: str | bytes) -> Iterable[str]:
    if isinstance(signature, str):
        yield signature
        return
    yield base64.b64encode(signature).decode()
    yield base64.urlsafe_b64encode(signature).decode()


def remember(reasonings: Sequence[Reasoning], parts: Sequence[ReasoningPart], trace_id: int) -> None:
    """Remember what one call (of trace ``trace_id``) captured: each text and signature with the
    reference that replaces it (entered when the registry is next asked, not on the model call's path)."""
    capture: list[object] = [trace_id]
    for r, p in zip(reasonings, parts, strict=False):
        capture += (r.text, r.signature, p.text_ref, p.digest, p.size)
    _registry.captured(tuple(capture))


def sight(reasonings: Sequence[Reasoning], trace_id: int) -> None:
    """Register a response's reasoning as soon as it is parsed, before capture (removal markers until
    ``remember`` gives their references). For the wrappers to call where another instrumentation wrapped
    inside loom-otel could record the response first (it returns to that wrapper before loom-otel's)."""
    for reasoning in reasonings:
        kept: _Kept = (None, None, len((reasoning.text or "").encode()))
        if reasoning.text and _registry.get(reasoning.text) is None:
            _registry.add(reasoning.text, REMOVED, kept, trace_id)
        for form in _signature_forms(reasoning.signature) if reasoning.signature else ():
            if _registry.get(form) is None:
                _registry.add(form, REMOVED, kept, trace_id)


def reference_of(secret: str) -> tuple[str, str | None, str | None, int] | None:
    """(replacement marker, ref, digest, size) of a text or signature loom-otel captured recently."""
    return _registry.reference(secret)


def forget_all() -> None:
    """Forget every remembered text and signature (tests)."""
    _registry.clear()


def _is_marker(value: str) -> bool:
    return value.startswith("[loom-otel ") or value == REMOVED


def _replacement(value: str) -> str:
    """What a reasoning text or signature becomes: its reference marker, else the removal marker."""
    if _is_marker(value):
        return value
    return _registry.get(value) or REMOVED


def _scrub_part(node: dict[str, Any]) -> bool:
    """Replace the text and signature fields of one reasoning-shaped JSON object; True when it was one."""
    kind = node.get("type")
    changed = False
    if kind in _TEXT_TYPES or node.get("thought") is True:
        for key in ("content", "thinking", "text"):
            value = node.get(key)
            if isinstance(value, str) and value:
                node[key] = _replacement(value)
                changed = True
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"]:
                        item["text"] = _replacement(item["text"])
                        changed = True
        summary = node.get("summary")
        if isinstance(summary, list):
            for item in summary:
                if isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"]:
                    item["text"] = _replacement(item["text"])
                    changed = True
    if kind in _TEXT_TYPES or kind == "redacted_thinking" or node.get("thought") is True:
        for key in _SIGNATURE_KEYS:
            value = node.get(key)
            if isinstance(value, str) and value:
                node[key] = _replacement(value)
                changed = True
    return changed


def _walk(node: Any) -> bool:
    changed = False
    if isinstance(node, dict):
        changed = _scrub_part(node)
        for key in ("thought_signature", "thoughtSignature", "reasoning_signature", "reasoning_content"):
            value = node.get(key)
            if isinstance(value, str) and value and not _is_marker(value):
                node[key] = _replacement(value)
                changed = True
        if "role" in node and isinstance(node.get("reasoning"), str) and node["reasoning"]:
            node["reasoning"] = _replacement(node["reasoning"])
            changed = True
        for value in node.values():
            if isinstance(value, dict | list):
                changed = _walk(value) or changed
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, dict | list):
                changed = _walk(item) or changed
    return changed


def _may_hold_reasoning(value: str) -> bool:
    """Whether a JSON text can hold a reasoning shape: every name and type ``_walk`` reads contains
    ``reasoning``, ``thinking`` or ``thought``, and a JSON text writes them as they are unless it escapes
    letters (``\\u``), which is then read in full. Most JSON values (a request's messages, tool calls)
    are not parsed at all."""
    return "reasoning" in value or "thinking" in value or "thought" in value or "\\u" in value


def _scrub_json(value: str) -> str:
    try:
        tree = json.loads(value)
    except ValueError:
        return value
    if _walk(tree):
        return json.dumps(tree, ensure_ascii=False, separators=(",", ":"))
    return value


def scrub_value(value: str, trace_id: int | None = None) -> str:
    """One string with every reasoning text and signature replaced (the module rules); the texts of
    ``trace_id`` are also searched for inside it."""
    if len(value) < _MIN_NEEDLE:
        return value
    exact = _registry.get(value)
    if exact is not None:
        return exact
    head = value[:1]
    if head.isspace():  # a copy of the value only when it starts with white space
        head = value.lstrip()[:1]
    if head in ("{", "[") and _may_hold_reasoning(value):
        value = _scrub_json(value)
    if _registry.has_traces():
        for needle, replacement in _registry.needles(trace_id, len(value)):
            if needle in value:
                value = value.replace(needle, replacement)
    return value


def _scrub_any(value: Any, trace_id: int | None) -> Any:
    """A scrubbed copy of an attribute value or log body: strings, sequences, and the nested maps and
    lists log records may hold (their reasoning shapes included); ``value`` itself when nothing changes."""
    kind = type(value)
    if kind is int or kind is bool or kind is float:  # most of a span's values: nothing to look at
        return value
    if isinstance(value, str):
        return scrub_value(value, trace_id)
    if isinstance(value, Mapping):
        tree = {key: _scrub_any(item, trace_id) for key, item in value.items()}
        _walk(tree)
        return value if tree == value else tree
    if isinstance(value, tuple | list) and value:
        items = [_scrub_any(item, trace_id) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return tuple(items) if isinstance(value, tuple) else items
    return value


def scrub_attributes(attributes: Mapping[str, Any], trace_id: int | None = None) -> dict[str, Any] | None:
    """A scrubbed copy of ``attributes``, or ``None`` when nothing in them changes."""
    changed: dict[str, Any] = {}
    for key, value in attributes.items():
        new = _scrub_any(value, trace_id)
        if new is not value and new != value:
            changed[key] = new
    for key, value in attributes.items():
        if isinstance(value, str) and value and key.rpartition(".")[2] in _SECRET_NAMES and not _is_marker(value):
            changed[key] = _replacement(changed.get(key, value))
        elif key.endswith(_FLAT_TYPE) and value in ("reasoning", "thinking"):
            prefix = key[: -len("type")]
            for name in _FLAT_FIELDS:
                flat = prefix + name
                current = changed.get(flat, attributes.get(flat))
                if isinstance(current, str) and current and not _is_marker(current):
                    changed[flat] = _replacement(current)
    if not changed:
        return None
    return {**attributes, **changed}


def _replace_attributes(holder: Any, trace_id: int | None, name: str = "_attributes") -> None:
    """Rewrite ``holder.<name>`` (a span's, an event's or a log record's attributes; a span's are shared
    with its readable copies)."""
    attributes = getattr(holder, name, None)
    if not attributes:
        return
    inner = getattr(attributes, "_dict", None)
    lock = getattr(attributes, "_lock", None)
    if not isinstance(inner, dict) or lock is None:
        scrubbed = scrub_attributes(attributes, trace_id)
        if scrubbed is not None:
            setattr(holder, name, scrubbed)
        return
    with lock:  # a BoundedAttributes: its dict read at once (its item view is a Python call per item)
        current = dict(inner)
    scrubbed = scrub_attributes(current, trace_id)
    if scrubbed is not None:
        with lock:  # rewritten in place, so every copy sharing it sees the change
            inner.update(scrubbed)


def _scrub_span(span: Any) -> None:
    scope = getattr(span, "instrumentation_scope", None)
    if scope is not None and scope.name.startswith(_OWN_SCOPE):
        return  # loom-otel's own spans carry references only
    context = getattr(span, "context", None)
    trace_id = context.trace_id if context is not None else None
    _replace_attributes(span, trace_id)
    for event in getattr(span, "_events", None) or ():
        _replace_attributes(event, trace_id)


_HAS_ON_ENDING: Final = hasattr(SpanProcessor, "_on_ending")


class ReasoningScrubber(SpanProcessor):
    """Rewrites every ending span's attributes and event attributes by the module rules. Never raises."""

    def _on_ending(self, span: Span) -> None:
        try:
            _scrub_span(span)
        except Exception:  # telemetry plumbing never raises into the app
            _report()

    def on_end(self, span: ReadableSpan) -> None:
        if _HAS_ON_ENDING:
            return
        try:
            _scrub_span(span)
        except Exception:
            _report()


def _report() -> None:
    from loom_otel.core._callbacks import logger

    logger.debug("loom-otel: scrubbing a span failed", exc_info=True)


class ReasoningLogScrubber:
    """A log-record processor rewriting each record's body and attributes before the processors after it
    (exporters) see them: register it first (``install_scrubber`` does)."""

    def on_emit(self, log_data: Any) -> None:
        try:
            record = getattr(log_data, "log_record", log_data)
            trace_id = getattr(record, "trace_id", None)
            body = getattr(record, "body", None)
            if body is not None:
                record.body = _scrub_body(body, trace_id)
            _replace_attributes(record, trace_id, "attributes")
        except Exception:
            _report()

    def emit(self, log_data: Any) -> None:
        self.on_emit(log_data)

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _scrub_body(body: Any, trace_id: int | None) -> Any:
    return _scrub_any(body, trace_id)


def install_scrubber(tracer_provider: Any = None, logger_provider: Any = None) -> None:
    """Register the scrubbers on the SDK providers given (the global ones otherwise), once each."""
    from opentelemetry import trace

    provider: Any = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    if hasattr(provider, "add_span_processor") and _first_time(provider):
        scrubber = ReasoningScrubber()
        provider.add_span_processor(scrubber)
        if not _HAS_ON_ENDING:
            _move_first(getattr(provider, "_active_span_processor", None), "_span_processors", scrubber)
    if logger_provider is None:
        try:
            from opentelemetry._logs import get_logger_provider

            logger_provider = get_logger_provider()
        except ImportError:  # pragma: no cover - every supported SDK has the logs API
            return
    if hasattr(logger_provider, "add_log_record_processor") and _first_time(logger_provider):
        log_scrubber = ReasoningLogScrubber()
        logger_provider.add_log_record_processor(log_scrubber)
        multi = getattr(logger_provider, "_multi_log_record_processor", None)
        _move_first(multi, "_log_record_processors", log_scrubber)


_installed: weakref.WeakSet[Any] = weakref.WeakSet()
_installed_lock = threading.Lock()


def _first_time(provider: Any) -> bool:
    """True once per provider (the scrubber is added once, however many instrumentors share it)."""
    with _installed_lock:
        if provider in _installed:
            return False
        _installed.add(provider)
        return True


def _move_first(multi: Any, name: str, processor: Any) -> None:
    """Put ``processor`` first among the processors ``multi`` runs in order (SDK-private tuple)."""
    current = getattr(multi, name, None)
    if isinstance(current, tuple) and processor in current:
        lock = getattr(multi, "_lock", None)
        ordered = (processor, *(p for p in current if p is not processor))
        if lock is not None:
            with lock:
                setattr(multi, name, ordered)
        else:
            setattr(multi, name, ordered)
