"""What a model call leaves to the garbage collector: nothing, as without loom-otel.

A reference cycle through a call (its capture hook, a vendor session holding it) keeps the call, its
span and the whole response alive until a collection runs: memory a loop does not expect to hold, and
collector time on the calling thread."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from loom_otel.core._calls._model_call import ModelCall

__all__ = ["left_to_the_collector"]


def left_to_the_collector(call: Callable[[], Any]) -> list[str]:
    """The model calls and spans that only the collector frees after ``call()`` (with the collector off)."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        call()
        gc.collect()
        return sorted(type(o).__name__ for o in gc.garbage if isinstance(o, ModelCall | ReadableSpan))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
