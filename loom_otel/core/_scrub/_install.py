"""Where the scrubber runs: before any processor of any OpenTelemetry SDK provider in the process.

``install_scrubber`` (called by ``instrument()``) wraps, once per process, the SDK's multi-processors
that every SDK provider hands its spans and log records to: ``SynchronousMultiSpanProcessor`` and
``ConcurrentMultiSpanProcessor`` (``_on_ending``: the ending span, before any processor's ``on_end``)
and ``SynchronousMultiLogRecordProcessor`` and ``ConcurrentMultiLogRecordProcessor`` (``on_emit``).
So the providers given to ``instrument()``, the global ones, a ``LoggerProvider`` set after
``instrument()`` and a peer's own ``TracerProvider`` are all reached, whatever processors and exporters
they have, in any order. A provider whose pipeline is not the SDK's gets a ``ReasoningScrubber`` /
``ReasoningLogScrubber`` added where it accepts processors; what remains out of reach (a provider that
is not the SDK's and takes no processor) is named in one warning. Telemetry another process exports is
out of reach by nature (README). A span that only the SDK's batch processors take is left, in
``_on_ending``, to their export thread (``_deferred``; the pipeline's ``on_end`` is wrapped for it too).
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any, Final

from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.trace import Span

from loom_otel.core._scrub._deferred import deferred, ended
from loom_otel.core._scrub._records import scrub_log_record, scrub_span

__all__ = ["ReasoningLogScrubber", "ReasoningScrubber", "install_scrubber", "leave_alone", "uninstall_scrubber"]

_PATCHED: Final = "_loom_otel_scrubs"


def _report() -> None:
    from loom_otel.core._runtime._callbacks import logger

    logger.debug("loom-otel: scrubbing a record failed", exc_info=True)


_owners: weakref.WeakSet[Any] = weakref.WeakSet()
"""The instrumentors that installed the scrubber and are still instrumented: with none, nothing is
rewritten (an uninstrumented process exports what it exported before ``instrument()``)."""


def _scrub_span_safely(span: Any) -> None:
    if not _owners:
        return
    try:
        scrub_span(span)
    except Exception:  # telemetry plumbing never raises into the app
        _report()


def _scrub_exported(span: Any) -> None:
    """A span a batch processor is exporting (``_deferred``), whether or not an owner is still there."""
    try:
        scrub_span(span)
    except Exception:
        _report()


def _scrub_ending(pipeline: Any, span: Any) -> None:
    """The span hook of the SDK's pipelines: ``span`` is left to the export thread where only batch
    processors take it (``_deferred``), else scrubbed now."""
    if not _owners:
        return
    try:
        if deferred(pipeline, span, _scrub_exported):
            return
    except Exception:
        _report()
    _scrub_span_safely(span)


def _span_ended(pipeline: Any, span: Any) -> None:
    """The SDK's pipelines' ``on_end``: what ``_deferred`` keeps of a span it marked."""
    try:
        ended(span, _scrub_exported)
    except Exception:
        _report()


def _scrub_emitted(pipeline: Any, log_data: Any) -> None:
    """The log hook of the SDK's pipelines."""
    _scrub_log_safely(log_data)


def _scrub_log_safely(log_data: Any) -> None:
    if not _owners:
        return
    try:
        scrub_log_record(log_data)
    except Exception:
        _report()


class ReasoningScrubber(SpanProcessor):
    """A span processor rewriting each ending span by the module rules, for a provider whose pipeline is
    not the SDK's multi-processor (those are reached without it). Never raises."""

    def _on_ending(self, span: Span) -> None:
        _scrub_span_safely(span)


class ReasoningLogScrubber:
    """The log-record processor twin: it must run before the exporters (``install_scrubber`` puts it first)."""

    def on_emit(self, log_data: Any) -> None:
        _scrub_log_safely(log_data)

    def emit(self, log_data: Any) -> None:
        self.on_emit(log_data)

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_left_alone: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()


def leave_alone(provider: Any) -> None:
    """Keep the scrubber off ``provider``'s spans (the benchmark's baseline)."""
    _left_alone.add(getattr(provider, "_active_span_processor", provider))


def _wrap(cls: type, name: str, scrub: Callable[[Any, Any], None]) -> bool:
    """Make ``cls.<name>(self, record)`` call ``scrub(self, record)`` first; False when ``cls`` has no
    such method."""
    original = cls.__dict__.get(name)
    if original is None:
        return False
    if getattr(original, _PATCHED, False):
        return True

    @functools.wraps(original)
    def scrubbing(self: Any, record: Any, *args: Any, **kwargs: Any) -> Any:
        if self not in _left_alone:
            scrub(self, record)
        return original(self, record, *args, **kwargs)

    setattr(scrubbing, _PATCHED, True)
    setattr(cls, name, scrubbing)
    return True


def _span_pipelines() -> tuple[type, ...]:
    from opentelemetry.sdk.trace import ConcurrentMultiSpanProcessor, SynchronousMultiSpanProcessor

    return (SynchronousMultiSpanProcessor, ConcurrentMultiSpanProcessor)


def _log_pipelines() -> tuple[type, ...]:
    from opentelemetry.sdk._logs import _internal as logs

    names = ("SynchronousMultiLogRecordProcessor", "ConcurrentMultiLogRecordProcessor")
    return tuple(getattr(logs, name) for name in names if hasattr(logs, name))


def _reach_sdk() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """Wrap the SDK's multi-processors (once); the classes now scrubbing spans and log records."""
    with _lock:
        spans = tuple(
            cls
            for cls in _span_pipelines()
            if _wrap(cls, "_on_ending", _scrub_ending) and _wrap(cls, "on_end", _span_ended)
        )
        logs = tuple(
            cls
            for cls in _log_pipelines()
            if _wrap(cls, "on_emit", _scrub_emitted) or _wrap(cls, "emit", _scrub_emitted)
        )
    return spans, logs


def install_scrubber(owner: object, tracer_provider: Any = None, logger_provider: Any = None) -> None:
    """Reach every SDK provider of the process; add a processor to the given (else global) providers
    whose pipeline is not the SDK's; warn once naming a provider that stays out of reach. The scrubber
    works while ``owner`` (an instrumentor) or another owner is instrumented."""
    from opentelemetry import trace
    from opentelemetry._logs import get_logger_provider

    _owners.add(owner)
    spans, logs = _reach_sdk()
    unreachable: list[str] = []
    provider: Any = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    if not isinstance(getattr(provider, "_active_span_processor", None), spans) and not _is_proxy(provider):
        if hasattr(provider, "add_span_processor"):
            if _first_time(provider):
                provider.add_span_processor(ReasoningScrubber())
        else:
            unreachable.append(f"tracer provider {_name(provider)}")
    logger: Any = logger_provider if logger_provider is not None else get_logger_provider()
    if not isinstance(getattr(logger, "_multi_log_record_processor", None), logs) and not _is_proxy(logger):
        if hasattr(logger, "add_log_record_processor"):
            if _first_time(logger):
                scrubber = ReasoningLogScrubber()
                logger.add_log_record_processor(scrubber)
                _move_first(getattr(logger, "_multi_log_record_processor", None), "_log_record_processors", scrubber)
        else:
            unreachable.append(f"logger provider {_name(logger)}")
    if unreachable:
        from loom_otel.core._runtime._warnings import warn

        what = " and ".join(unreachable)
        warn(
            f"loom-otel cannot scrub reasoning from what the {what} exports (not an OpenTelemetry SDK "
            "provider, no processors accepted): reasoning text another instrumentation records there is "
            "exported as it is",
            once=("scrubber-unreachable", what),
        )


def uninstall_scrubber(owner: object) -> None:
    """``owner`` was uninstrumented: with no other owner left, the scrubber rewrites nothing."""
    _owners.discard(owner)


def _is_proxy(provider: Any) -> bool:
    """The API's placeholder or no-op providers: nothing is exported through them (a real provider set
    later is an SDK one, reached through its class, or named when instrumented again)."""
    return type(provider).__module__.startswith(("opentelemetry.trace", "opentelemetry._logs"))


def _name(provider: Any) -> str:
    kind = type(provider)
    return f"{kind.__module__}.{kind.__qualname__}"


_installed: weakref.WeakSet[Any] = weakref.WeakSet()


def _first_time(provider: Any) -> bool:
    """True once per provider (the scrubber is added once, however many instrumentors share it)."""
    with _lock:
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
