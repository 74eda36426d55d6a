"""What a call observer is given, public face for the live view: the observer protocol, the model call it
watches and the capture the call ends with (types only; the call path itself stays in core)."""

from __future__ import annotations

from loom_otel.core._calls._capture import Capture
from loom_otel.core._calls._model_call import ModelCall
from loom_otel.core._calls._observer import CallObserver

__all__ = [
    "CallObserver",
    "Capture",
    "ModelCall",
]
