"""Delivery when the process ends: at interpreter exit (``atexit``) and on ``SIGTERM``.

One ``atexit`` handler for every chained exporter of the process, registered when the first is
built: ``atexit`` runs handlers last-registered-first, so it runs before the shutdown of a tracer
provider built earlier (the usual order: provider, then its exporters).

``SIGTERM``'s default action kills the process without running ``atexit``. When nobody handles it
(the default disposition, seen from the main thread when the first exporter is built), a handler is
installed that puts the default back at once (a second ``SIGTERM`` kills immediately), delivers
what is owed from a thread (never from the handler itself: the interrupted code may hold the locks
delivery needs), then sends the process ``SIGTERM`` again, which ends it as the default would have.
An application that installs its own handler, before or after, keeps it.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
import weakref
from collections.abc import Callable
from types import FrameType

__all__ = ["deliver_on_exit"]

_logger = logging.getLogger(__name__)
_lock = threading.Lock()
_deliveries: list[weakref.WeakMethod[Callable[[], None]]] = []
_installed = False


def deliver_on_exit(delivery: Callable[[], None]) -> None:
    """Run the bound method ``delivery`` (held weakly) at exit and on an unhandled ``SIGTERM``."""
    global _installed
    with _lock:
        _deliveries[:] = [d for d in _deliveries if d() is not None]
        _deliveries.append(weakref.WeakMethod(delivery))
        first, _installed = not _installed, True
    if first:
        atexit.register(_deliver_all)
        _install_sigterm()


def _deliver_all() -> None:
    with _lock:
        deliveries = [d() for d in _deliveries]
    for delivery in deliveries:
        if delivery is not None:
            try:
                delivery()
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
