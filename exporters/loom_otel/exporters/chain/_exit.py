"""Delivery when the process ends: at interpreter exit (``atexit``) and on ``SIGTERM``.

One ``atexit`` handler for every chained exporter of the process, registered when the first is
built: ``atexit`` runs handlers last-registered-first, so it runs before the shutdown of a tracer
provider built earlier (the usual order: provider, then its exporters).

The handler runs in three steps within ``EXIT_TIMEOUT`` seconds: each exporter stops its sweeper and
asks whether its collector answers at all (``prepare_exit``); the span pipeline is flushed (the
processors of the global SDK tracer provider, and of each one given to an instrumentor, export what
they still hold, through the exporters, which acknowledge the records those spans carry); then each
exporter resends only what is still owed (``deliver_at_exit``). Flushing first is what makes delivery
exactly-once when nothing failed: a record resent while the batch processor still held its call's
span would reach the collector twice.

``SIGTERM``'s default action kills the process without running ``atexit``. When nobody handles it
(the default disposition, seen from the main thread when the first exporter is built), a handler is
installed that puts the default back at once (a second ``SIGTERM`` kills immediately), runs the same
steps from a thread (never from the handler itself: the interrupted code may hold the locks
delivery needs), then sends the process ``SIGTERM`` again, which ends it as the default would have.
An application that installs its own handler, before or after, keeps it.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
import time
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Final, Protocol

from opentelemetry.sdk.trace import TracerProvider

from loom_otel.core.runtime import span_providers

__all__ = ["EXIT_TIMEOUT", "ExitDelivery", "deliver_on_exit", "flush_span_pipeline"]

_logger = logging.getLogger(__name__)

EXIT_TIMEOUT: Final = 5.0
"""At interpreter exit, how long the exporters keep flushing and delivering what is owed (the rest
stays in the journal for the next process or ``loom-otel forward``)."""


class ExitDelivery(Protocol):
    """What the exit handler asks of each chained exporter."""

    def prepare_exit(self, deadline: float) -> None:
        """Stop background work and find out whether the downstream answers (before the flush)."""

    def deliver_at_exit(self, deadline: float) -> None:
        """Resend what the flushed span pipeline did not deliver."""


_lock = threading.Lock()
_exporters: weakref.WeakSet[ExitDelivery] = weakref.WeakSet()
_installed = False


def deliver_on_exit(exporter: ExitDelivery) -> None:
    """Run ``exporter``'s exit steps (held weakly) at exit and on an unhandled ``SIGTERM``."""
    global _installed
    with _lock:
        _exporters.add(exporter)
        first, _installed = not _installed, True
    if first:
        atexit.register(_deliver_all)
        _install_sigterm()


def flush_span_pipeline(deadline: float) -> bool:
    """Have the span processors of every SDK tracer provider loom-otel's spans go to (the global one and
    those given to an instrumentor, ``core._runtime._providers``) export what they hold, before ``deadline``
    (``time.monotonic()``); ``False`` if one did not finish (or there is none)."""
    flushed = False
    for provider in span_providers():
        if not isinstance(provider, TracerProvider):
            continue
        try:
            flushed = provider.force_flush(max(1, int((deadline - time.monotonic()) * 1000)))
        except Exception as exc:
            _logger.warning("chained exporter: flushing the span pipeline failed (%s)", type(exc).__name__)
            return False
        if not flushed:
            return False
    return flushed


def _deliver_all() -> None:
    deadline = time.monotonic() + EXIT_TIMEOUT
    with _lock:
        exporters = list(_exporters)
    if not exporters:
        return
    for exporter in exporters:
        _run(exporter.prepare_exit, deadline)
    flush_span_pipeline(deadline)
    for exporter in exporters:
        _run(exporter.deliver_at_exit, deadline)


def _run(step: Callable[[float], None], deadline: float) -> None:
    try:
        step(deadline)
    except Exception as exc:
        _logger.warning("chained exporter: delivery at exit failed (%s)", type(exc).__name__)


def _install_sigterm() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):
        return


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(target=_deliver_then_terminate, name="loom-otel-sigterm", daemon=True).start()


def _deliver_then_terminate() -> None:
    _deliver_all()
    os.kill(os.getpid(), signal.SIGTERM)
