"""The live view (ADR D6): model reasoning as it streams, guarded, to those allowed to see it.

In process::

    hub = LiveReasoningHub()
    AnthropicInstrumentor().instrument(config=ReasoningConfig(store=store, live=True, on_reasoning=hub))

Over HTTP (extra ``live``): ``loom_otel.live.asgi.create_app(hub, store=store, source=journal_dir,
authenticator=bearer_authenticator({token: Viewer("alice", "acme")}))``, served by any ASGI server;
``loom-otel tail --execution ID --token TOKEN`` follows it in a terminal. An authenticator is required
(or ``trusted_proxy=True`` behind a proxy that sets the identity headers); feeds are capped per viewer
and in all (``LiveSubscriberLimitError``).
"""

from __future__ import annotations

from loom_otel.core.exceptions import LiveSubscriberLimitError
from loom_otel.live._channel import (
    CallEnded,
    CallStarted,
    DeltaGuard,
    LiveCall,
    LiveChannel,
    LiveEvent,
    LiveObserver,
    ReasoningDelta,
    ReasoningSink,
    TextDelta,
    dropped_deltas,
    flush_live,
    register_sink,
)
from loom_otel.live._feed import Done, FeedEvent, Partial, Reset, Subscription, Viewer, admits
from loom_otel.live._hub import LiveReasoningHub

__all__ = [
    "CallEnded",
    "CallStarted",
    "DeltaGuard",
    "Done",
    "FeedEvent",
    "LiveCall",
    "LiveChannel",
    "LiveEvent",
    "LiveObserver",
    "LiveReasoningHub",
    "LiveSubscriberLimitError",
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
