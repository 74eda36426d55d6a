"""The live view (ADR D6): model reasoning as it streams, guarded, to those allowed to see it.

In process::

    hub = LiveReasoningHub()
    AnthropicInstrumentor().instrument(config=ReasoningConfig(store=store, live=True, on_reasoning=hub))

Over HTTP (extra ``live``): ``loom_otel.live.asgi.create_app(hub, store=store, source=journal_dir)``,
served by any ASGI server; ``loom-otel tail --execution ID`` follows it in a terminal.
"""

from __future__ import annotations

from loom_otel.core._live import (
    CallEnded,
    CallStarted,
    DeltaGuard,
    LiveCall,
    LiveEvent,
    LiveObserver,
    ReasoningDelta,
    ReasoningSink,
    TextDelta,
    dropped_deltas,
    flush_live,
    register_sink,
)
from loom_otel.core._live_feed import Done, FeedEvent, Partial, Reset, Subscription, Viewer, admits
from loom_otel.core._live_hub import LiveReasoningHub

__all__ = [
    "CallEnded",
    "CallStarted",
    "DeltaGuard",
    "Done",
    "FeedEvent",
    "LiveCall",
    "LiveEvent",
    "LiveObserver",
    "LiveReasoningHub",
    "Partial",
    "ReasoningDelta",
    "ReasoningSink",
    "Reset",
    "Subscription",
    "TextDelta",
    "Viewer",
    "admits",
    "dropped_deltas",
    "flush_live",
    "register_sink",
]
