"""The one way loom-otel warns: attributed to the user's call site, never to loom-otel's internals.

``warnings.warn`` attributes a warning to a fixed number of frames up the stack, but the path from
the user's code to the line that warns goes through loom-otel, OpenTelemetry, ``wrapt`` and the
vendor SDK, and its depth varies. ``warn`` walks the stack to the first frame outside those packages
(the frame the user wrote: ``instrument()``, the model call, the exporter's construction), so the
warning's file and line are the user's and the warnings filters (``module=``) match the user's module.
Where no frame is the user's (at start-up under ``opentelemetry-instrument``, in a background thread),
the warning is attributed to nothing: one line, ``loom-otel:0: LoomOtelWarning: ...``, module ``loom_otel``.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import warnings
from collections.abc import Hashable
from types import FrameType
from typing import Final

from loom_otel.core.exceptions import LoomOtelWarning

__all__ = ["INTERNAL_PACKAGES", "call_package", "call_site", "forget_once", "warn"]

INTERNAL_PACKAGES: Final = (
    "loom_otel",
    "opentelemetry",
    "wrapt",
    "anthropic",
    "openai",
    "google.genai",
    "botocore",
    "boto3",
    "httpx",
    "httpcore",
    "contextlib",
    "importlib",
    "threading",
    "concurrent.futures",
    "runpy",
    "site",
    "sitecustomize",
)
"""Packages whose frames a warning skips: loom-otel, the OpenTelemetry packages, the wrapped SDKs (boto3
and botocore for Bedrock), ``contextlib`` (the glue between a ``with`` statement and a context manager that
is itself internal),
and the interpreter's own glue: imports, threads and thread pools, ``python -m``, start-up (``site``,
and ``opentelemetry-instrument``'s ``sitecustomize``)."""
NOWHERE: Final = "loom-otel"
"""The file name of a warning no user frame issued (``warnings`` prints no source line for it)."""


_once: set[Hashable] = set()
_once_lock = threading.Lock()


def warn(message: str, category: type[Warning] = LoomOtelWarning, *, once: Hashable | None = None) -> None:
    """Issue ``message`` as ``category`` at the first frame outside ``INTERNAL_PACKAGES`` (at no
    frame when every frame is internal, as at interpreter start-up). With ``once``, only the first
    warning with that key in the process is issued, whatever the warnings filters say."""
    if once is not None:
        with _once_lock:
            if once in _once:
                return
            _once.add(once)
    level = _user_stacklevel(sys._getframe(1))
    if level is None:
        warnings.warn_explicit(message, category, NOWHERE, 0, module="loom_otel")
    else:
        warnings.warn(message, category, stacklevel=level)


def call_site() -> str:
    """``file:line`` of the first frame outside ``INTERNAL_PACKAGES`` (the user's, or a framework's, call)."""
    frame = _caller(sys._getframe(1))
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def call_package() -> str:
    """The top-level package of the first frame outside ``INTERNAL_PACKAGES`` (``crewai`` for a call made
    in ``crewai.llm``, ``autogen_ext`` in ``autogen_ext.models.anthropic``; ``__main__`` for a script)."""
    name = _caller(sys._getframe(1)).f_globals.get("__name__")
    return name.partition(".")[0] if isinstance(name, str) and name else "?"


def _caller(frame: FrameType) -> FrameType:
    """The first frame outside ``INTERNAL_PACKAGES``; when that is the event loop's (the SDK call runs as a
    task of its own: AutoGen's ``asyncio.ensure_future(client.messages.create(...))``), the frame that
    awaits the task, where the call was made (``_awaiting``), if one can be found."""
    while _is_internal(frame) and frame.f_back is not None:
        frame = frame.f_back
    name = frame.f_globals.get("__name__")
    if isinstance(name, str) and (name == "asyncio" or name.startswith("asyncio.")):
        return _awaiting() or frame
    return frame


def _awaiting() -> FrameType | None:
    """The innermost frame outside ``INTERNAL_PACKAGES`` of the coroutine of the task that awaits the
    current one (its wake-up is a done callback of this task); ``None`` when there is none."""
    try:
        task = asyncio.current_task()
        for callback, _ in getattr(task, "_callbacks", None) or ():
            owner = getattr(callback, "__self__", None)
            if not isinstance(owner, asyncio.Task):
                continue
            found: FrameType | None = None
            awaited: object = owner.get_coro()
            while awaited is not None:  # down the chain of coroutines (and async generators) it awaits
                frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "ag_frame", None)
                if not isinstance(frame, FrameType):
                    break
                if not _is_internal(frame):
                    found = frame
                awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "ag_await", None)
                if awaited is not None and not hasattr(awaited, "cr_frame") and not hasattr(awaited, "ag_frame"):
                    # ``async for``: an ``asend`` awaitable, which only refers to its async generator
                    awaited = next((r for r in gc.get_referents(awaited) if hasattr(r, "ag_frame")), None)
            if found is not None:
                return found
    except Exception:  # never raises into the app: the event loop's frame is named instead
        return None
    return None


def forget_once() -> None:
    """Forget which ``once`` warnings were issued (tests)."""
    with _once_lock:
        _once.clear()


def _user_stacklevel(caller: FrameType) -> int | None:
    """The ``stacklevel`` of the first frame outside ``INTERNAL_PACKAGES``; ``None`` when there is none."""
    # ``warnings`` counts ``caller`` (warn's caller) as level 2 and, above level 1, skips the frames
    # of the import machinery without counting them: count the same way.
    level, frame = 2, caller
    while _is_internal(frame):
        if frame.f_back is None:
            return None
        frame = frame.f_back
        if not _is_import_machinery(frame):
            level += 1
    return level


def _is_internal(frame: FrameType) -> bool:
    if _is_import_machinery(frame):
        return True
    name = frame.f_globals.get("__name__")
    if not isinstance(name, str):
        return False
    return any(name == package or name.startswith(package + ".") for package in INTERNAL_PACKAGES)


def _is_import_machinery(frame: FrameType) -> bool:
    filename = frame.f_code.co_filename
    return "importlib" in filename and "_bootstrap" in filename
