"""Other GenAI instrumentations of the same call (DESIGN "Telemetry citizenship": one GenAI span per
call): the official OpenTelemetry ones, OpenLLMetry, OpenInference, a framework's model-request span.

- ``foreign_model_span``: another instrumentation's model-call span is current (it wraps outside
  loom-otel and made its span current): loom-otel's events go on it;
- ``peer_outside``: another instrumentation wraps the method outside loom-otel (its span may not be
  current): loom-otel's span then carries no GenAI attributes;
- ``without_peers``: another instrumentation wraps it inside loom-otel: it is passed under.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, cast

from opentelemetry import trace
from opentelemetry.trace import Span

from loom_otel.core._evidence import _attributes as attr

__all__ = ["foreign_model_span", "peer_outside", "without_peers"]

_MODEL_CALL_OPERATIONS: Final = frozenset({"chat", "generate_content", "text_completion", "completion"})


def foreign_model_span(own: Span | None) -> Span | None:
    """The current span when another GenAI instrumentation started it for this model call (the official
    OTel, OpenLLMetry and OpenInference instrumentations, a framework's model-request span); else ``None``."""
    span = trace.get_current_span()
    attributes = getattr(span, "attributes", None)
    if not attributes or not span.is_recording():
        return None
    if span is own:
        return None  # loom-otel's own call (a per-request hook inside it)
    if (
        attributes.get(attr.GEN_AI_OPERATION_NAME) in _MODEL_CALL_OPERATIONS
        or attributes.get("llm.request.type") in _MODEL_CALL_OPERATIONS
        or attributes.get("openinference.span.kind") == "LLM"
    ):
        return span
    return None


_PEERS: Final = ("opentelemetry.instrumentation.", "opentelemetry.util.genai", "openinference.instrumentation.")
"""Where other GenAI instrumentations' wrappers live (the official OTel ones, OpenLLMetry, OpenInference)."""


def _is_peer(wrapper: object) -> bool:
    if wrapper is None:
        return False
    function = getattr(wrapper, "func", wrapper)  # a functools.partial names its function
    module = getattr(function, "__module__", None) or type(function).__module__
    return isinstance(module, str) and module.startswith(_PEERS)


def _is_ours(wrapper: object) -> bool:
    return str(getattr(wrapper, "__module__", "")).startswith("loom_otel.")


_OUTSIDE: dict[tuple[type, str], tuple[object, bool]] = {}
"""``peer_outside`` per (class, method name): the outermost attribute it was read off, and the answer (a
chain of wrappers below a given outermost one never changes; instrumenting again replaces it)."""


def peer_outside(wrapped: object, instance: object) -> bool:
    """Whether another GenAI instrumentation wrapped this method outside loom-otel's wrapper (it was
    instrumented after loom-otel): read off the wrappers on the instance's class, outermost first."""
    name = getattr(wrapped, "__name__", None)
    if not isinstance(name, str) or instance is None:
        return False
    kind = type(instance)
    found: Any = kind.__dict__.get(name)  # where the SDK defines it, usually: no walk up the classes
    if found is None:
        found = next((k.__dict__[name] for k in kind.__mro__ if name in k.__dict__), None)
    seen = _OUTSIDE.get((kind, name))
    if seen is not None and seen[0] is found:
        return seen[1]
    if len(_OUTSIDE) > 256:
        _OUTSIDE.clear()
    answer = _outside_in(found)
    _OUTSIDE[(kind, name)] = (found, answer)
    return answer


def _outside_in(found: Any) -> bool:
    while (wrapper := getattr(found, "_self_wrapper", None)) is not None:
        if _is_ours(wrapper):
            return False
        if _is_peer(wrapper):
            return True
        found = found.__wrapped__
    return False


def without_peers(wrapped: Callable[..., Any]) -> Callable[..., Any]:
    """The SDK method below other GenAI instrumentations' wrappers of it (they were instrumented before
    loom-otel, so loom-otel's wrapper is outside theirs): loom-otel's span is the call's one span, and
    theirs would count the call again. Any other wrapper stays."""
    found: Any = wrapped
    while _is_peer(getattr(found, "_self_wrapper", None)):  # a wrapt function wrapper of a peer
        found = found.__wrapped__
    return cast("Callable[..., Any]", found)
