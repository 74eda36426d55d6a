"""Spans only batch processors take: scrubbed on the export thread, right before the exporter.

Where every processor of a provider's pipeline is the SDK's own ``BatchSpanProcessor`` (the usual setup:
the distro's, OTLP's), nothing reads an ending span before its batch is exported: ``on_end`` only
queues it. Such a span is not scrubbed on the calling thread (``_install``'s ``_on_ending`` hook) but
marked, and each of those processors' exporters is wrapped (once) so that the marked spans of a batch are
scrubbed on the export thread before the exporter is handed the batch (``force_flush`` and
``shutdown`` export through the same path, on their caller's thread). A span the pipeline does not
sample is never exported and is left as it is. With any other processor in the pipeline
(``SimpleSpanProcessor``, a subclass, the application's own) the span is scrubbed in ``_on_ending``,
before any processor's ``on_end``.

The scrub must find what it would have found at the span's end: the registry forgets the oldest
captures as new ones come (``_registry.SAFE_LAG``). So when half of ``SAFE_LAG`` has been captured
since the oldest marked span ended (a batch processor exports every few seconds), a thread of the
scrubber's scrubs the marked spans then, before their export (woken by the capture that crosses it,
``_Registry.alarm``, or a span ending); at ``SAFE_LAG`` (that thread behind), the thread of the next
capture or span ending does it (and scrubs that span too). What a generation of windows holds is twice
``SAFE_LAG``: an export that begins just under it still finds every capture its spans could hold. An
exporter handed a batch while a span of it is being scrubbed waits for that scrub (``_rescuing``). At
most ``_MAX_MARKED`` spans wait (the batch processor drops spans when its queue is full). A rescue that
takes a span between its ``_on_ending`` and its ``on_end`` scrubs the ending span, whose readable copy
may already be made (its attributes and events are shared, its name and status are not): the copy is
scrubbed too, on the ending thread (``ended``).
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Final

from opentelemetry.sdk.trace.export import BatchSpanProcessor

from loom_otel.core._runtime._fork import renew_after_fork, renew_module_after_fork
from loom_otel.core._scrub._records import is_own
from loom_otel.core._scrub._registry import NEVER, SAFE_LAG, registry

__all__ = ["deferred", "ended", "forget", "marked"]

_CHECKED: Final = "_loom_otel_batched"
"""The pipeline's processors (its tuple, as read) when all of them were found batching and wrapped."""

_MAX_MARKED: Final = 4096
"""At most this many spans wait marked: a span the batch processor dropped (its queue full) is never
exported and keeps its mark until a rescue; past this, the ending span's thread scrubs them all."""
_Scrub = Callable[[Any], None]
_marks: dict[tuple[int, int], list[Any]] = {}
"""Marked spans by (trace id, span id): [``registry.queued`` at the span's end, the span: the ending
one, then (``ended``) its readable copy, what the batch holds; whether it ended]."""
_taken_ending: dict[tuple[int, int], None] = {}
"""Spans a rescue took before their ``on_end``: their readable copies are scrubbed in ``ended``."""
_order: deque[tuple[tuple[int, int], int]] = deque()
"""The marks' keys and positions in the order made (a key no longer marked is skipped: ``_oldest``)."""
_lock = threading.Lock()
_rescuing = threading.Lock()
"""Held by whoever scrubs marked spans it took from ``_marks`` outside an export."""


class _ScrubbingExporter:
    """A batch processor's exporter that scrubs the marked spans of a batch before handing it on."""

    def __init__(self, inner: Any, scrub: _Scrub) -> None:
        self._loom_otel_inner = inner
        self._loom_otel_scrub = scrub

    def export(self, spans: Sequence[Any]) -> Any:
        mine = []
        with _lock:  # a mark taken here is this thread's to scrub (the calling thread's rescue takes it too)
            for span in spans:
                context = span.context
                if context is not None and _marks.pop((context.trace_id, context.span_id), None) is not None:
                    mine.append(span)
            _rearm()
        for span in mine:
            self._loom_otel_scrub(span)
        with _rescuing:  # a span of the batch another thread took is scrubbed before it is exported
            pass
        return self._loom_otel_inner.export(spans)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loom_otel_inner, name)


def _batching(processors: Sequence[Any], scrub: _Scrub) -> bool:
    """Whether every one of ``processors`` is the SDK's ``BatchSpanProcessor`` (its exporter wrapped now)."""
    if not processors:
        return False
    batches: list[Any] = [getattr(p, "_batch_processor", None) for p in processors if type(p) is BatchSpanProcessor]
    if len(batches) != len(processors) or not all(hasattr(b, "_exporter") for b in batches):
        return False
    with _lock:
        for batch in batches:
            if not isinstance(batch._exporter, _ScrubbingExporter):
                batch._exporter = _ScrubbingExporter(batch._exporter, scrub)
    return True


def deferred(pipeline: Any, span: Any, scrub: _Scrub) -> bool:
    """True when ``span``, ending in ``pipeline`` (an SDK multi-processor), is left for the export
    thread: every processor batches it (marked, it is scrubbed before its exporter sees it) or none
    exports it (not sampled). False: scrub it now."""
    processors = getattr(pipeline, "_span_processors", None)
    if processors is None or is_own(span):  # loom-otel's own: nothing to scrub, at once
        return False
    if getattr(pipeline, _CHECKED, None) is not processors:
        if not _batching(processors, scrub):
            return False
        setattr(pipeline, _CHECKED, processors)
    context = span.context
    if context is None:
        return False
    if not context.trace_flags.sampled:
        return True
    now = registry.queued
    with _lock:
        oldest = _oldest(now)
        if not _marks:
            registry.on_alarm = functools.partial(_alarm, scrub)
            registry.alarm = now + SAFE_LAG // 2
        crowded = len(_marks) >= _MAX_MARKED
        if now - oldest < SAFE_LAG and not crowded:
            _marks[context.trace_id, context.span_id] = [now, span, False]
            _order.append(((context.trace_id, context.span_id), now))
            if len(_order) > 2 * _MAX_MARKED:  # taken marks behind one that stays: made again from the marks
                kept = [(key, mark[0]) for key, mark in _marks.items()]
                _order.clear()
                _order.extend(kept)
    if crowded:
        _rescue(scrub)
        return False
    if now - oldest < SAFE_LAG // 2:
        return True
    if now - oldest < SAFE_LAG:
        _helper.wake(scrub)
        return True
    _rescue(scrub)
    return False


def _alarm(scrub: _Scrub) -> None:
    """Half of ``SAFE_LAG`` was captured since the oldest marked span ended: the helper thread scrubs
    the marked spans; at ``SAFE_LAG`` (the helper behind, no span ending meanwhile) this thread does."""
    with _lock:
        oldest = _oldest(registry.queued)
    if registry.queued - oldest < SAFE_LAG:
        _helper.wake(scrub)
    else:
        _rescue(scrub)


def ended(span: Any, scrub: _Scrub) -> None:
    """The pipeline's ``on_end``: a marked span's readable copy (what the batch exports: its name and
    status are copies) replaces the ending span in its mark, for ``_rescue``; a copy whose ending span a
    rescue took already is scrubbed now."""
    context = span.context
    if context is None or not (_marks or _taken_ending):
        return
    key = (context.trace_id, context.span_id)
    with _lock:
        mark = _marks.get(key)
        if mark is not None:
            mark[1], mark[2] = span, True
            return
        taken = key in _taken_ending
        if taken:
            del _taken_ending[key]
    if taken:
        scrub(span)


class _Helper:
    """The scrubber's thread: scrubs the marked spans when woken (started on first need, again after a
    fork)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._thread: threading.Thread | None = None
        self._scrub: _Scrub | None = None

    def wake(self, scrub: _Scrub) -> None:
        self._scrub = scrub
        thread = self._thread
        if thread is None or not thread.is_alive():
            with _lock:
                if self._thread is thread:
                    self._event = threading.Event()
                    self._thread = threading.Thread(target=self._run, name="loom-otel-scrub", daemon=True)
                    self._thread.start()
        self._event.set()

    def _run(self) -> None:
        while True:
            self._event.wait()
            self._event.clear()
            registry.enter_captured()  # while what their calls showed is still kept (``_MAX_SHOWN``)
            scrub = self._scrub
            if scrub is not None:
                _rescue(scrub)


_helper: Final = _Helper()
renew_module_after_fork(__name__)  # a forked child gets ``_lock`` and ``_rescuing`` back unlocked
renew_after_fork(_helper)  # and the helper's event (its thread, gone, starts again when next woken)


def _rescue(scrub: _Scrub) -> None:
    """Scrub the spans marked now on this thread, one at a time (``_lock`` is held only to take a mark:
    the calling threads mark their spans meanwhile, and those wait for the next rescue or their export;
    an exporter waits on ``_rescuing`` for one pass, never for a load that keeps marking)."""
    with _rescuing:
        with _lock:
            keys = list(_marks)
        for key in keys:
            with _lock:
                mark = _marks.get(key)
                if mark is not None:
                    if not mark[2]:  # before its ``on_end``: noted first, as ``ended`` may not lock
                        _taken_ending[key] = None
                        while len(_taken_ending) > _MAX_MARKED:
                            del _taken_ending[next(iter(_taken_ending))]
                    del _marks[key]
            if mark is not None:
                scrub(mark[1])
        with _lock:
            _rearm()


def _oldest(default: int) -> int:
    """Where ``registry.queued`` stood when the oldest span still marked ended (``_lock`` held)."""
    while _order and _order[0][0] not in _marks:
        _order.popleft()
    return _order[0][1] if _order else default


def _rearm() -> None:
    """The registry's alarm, for the oldest span still marked; with none, no alarm (captures are entered
    when the registry is next asked, as without batching) (``_lock`` held)."""
    oldest = _oldest(NEVER)
    registry.alarm = NEVER if oldest == NEVER else oldest + SAFE_LAG // 2
    if oldest == NEVER:
        registry.on_alarm = None


def marked() -> int:
    """How many ended spans wait to be scrubbed before their export."""
    return len(_marks)


def forget() -> None:
    """Forget the marked spans (tests: with what the registry remembered, ``forget_all``)."""
    with _lock:
        _marks.clear()
        _taken_ending.clear()
        _order.clear()
        registry.alarm = NEVER
        registry.on_alarm = None
