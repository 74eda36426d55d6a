"""What a model call leaves to the garbage collector: nothing, as without loom-otel.

A reference cycle through a call (its capture hook, a vendor session holding it) keeps the call, its
span and the whole response alive until a collection runs: memory a loop does not expect to hold, and
collector time on the calling thread. Checked without a collection (one over a long test session's
heap takes a second): with the collector off, every call made must be gone once the caller dropped
what it got back, or else still be held by something other than a cycle."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from loom_otel.core._calls._handler import ReasoningHandler
from loom_otel.core._calls._model_call import ModelCall

__all__ = ["left_to_the_collector"]


def left_to_the_collector(call: Callable[[], Any]) -> list[str]:
    """The model calls (and their spans) still alive after ``call()`` returned and its result was dropped,
    with the collector off: what only the collector would free."""
    made: list[weakref.ref[ModelCall]] = []
    real = ReasoningHandler.call

    def recorded(handler: ReasoningHandler, *args: Any, **kwargs: Any) -> ModelCall:
        model_call = real(handler, *args, **kwargs)
        made.append(weakref.ref(model_call))
        return model_call

    enabled = gc.isenabled()
    gc.disable()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ReasoningHandler, "call", recorded)
            call()
        assert made, "no model call was made"
        alive = [ref for ref in made if ref() is not None]
        if not alive:
            return []
        # Still referenced: by something that keeps it on purpose (an async client's pooled connection
        # keeps the context it was opened in), or by a cycle only, which a collection frees.
        names = {id(ref): _name(ref) for ref in alive}
        gc.collect()
        return [names[id(ref)] for ref in alive if ref() is None]
    finally:
        if enabled:
            gc.enable()


def _name(ref: weakref.ref[ModelCall]) -> str:
    """What the call is (a local here: no reference to it outlives this function)."""
    model_call = ref()
    return "" if model_call is None else f"{type(model_call).__name__}, span {type(model_call.span).__name__}"
