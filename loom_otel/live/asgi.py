"""The live view over HTTP (extra ``live``): a Starlette app serving ``LiveReasoningHub``.

``GET /executions/{id}/reasoning`` is a Server-Sent Events stream:

- ``reasoning-partial``: catch-up. ``source: "live"``: the in-progress reasoning of a step, per block;
  ``source: "record"``: the captured record of a step that ended before the viewer saw it stream
  (read through ``read_reasoning_bounded``; per part a ``status``, text only when ``ok``);
- ``reasoning``: one live delta (``block``, ``seq``, ``text``);
- ``text``: one delta of the answer text (the same fields, ``origin`` ``llm-output:<step>``), only when
  the instrumentors run with live text on (``live_text=True``); not part of the catch-up;
- ``reset``: forget what was shown for ``step`` (a re-run superseded it; ``null``: for every step);
- ``done``: a step's call ended; ``kept: false`` says no record was kept (no store, capture off).

``GET /executions/{id}/reasoning/record?step=`` answers as JSON the captures of the ended calls the
viewer may read (of that step, or without ``step`` of every step), at most 256 parts and 1 MiB of text
(``truncated: true`` past either); ``received: true`` marks the parts of the newest such call of a
step (a later call of another principal's does not count).

Audience (ADR D6 shared mode): a call is served only to its asker (``execution(principal=...)``) and
the execution's owner (``owner=``), in the same tenant, and a reader gets only the captures of the calls
it was admitted to: another principal's call of a step with the same name is neither shown nor read.
Anyone else, another tenant, an unauthenticated request and an unknown execution or step all get the
same 404.

Identity: the app trusts no identity a client can set. ``authenticator`` is required (a function from
the request to the ``Viewer`` it proves; ``bearer_authenticator`` maps tokens to viewers), unless the
deployment declares a trusted proxy (``trusted_proxy=True`` or ``LOOM_OTEL_LIVE_TRUSTED_PROXY=true``):
then ``X-Loom-Principal`` / ``X-Loom-Tenant`` are taken as sent, which is only safe when a proxy that
authenticates every request sets them (stripping the client's) and the app is reachable through it
alone; building such an app warns once. Neither: ``ReasoningConfigError``.

Room: a viewer the hub would admit past its feed caps gets 429 (this viewer's
``max_subscribers_per_viewer``) or 503 (``max_subscribers`` in all), with ``Retry-After``.

All text served is untrusted model output (each body names its ``origin``): render it as text, never
as markup or instructions.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from loom_otel.audit._captures import ReasoningSource
from loom_otel.core.exceptions import LiveSubscriberLimitError
from loom_otel.core.stores import ReasoningStore
from loom_otel.live._auth import (
    Authenticator,
    authenticate,
    bearer_authenticator,
    header_authenticator,
    resolve_authenticator,
)
from loom_otel.live._channel import ReasoningDelta, TextDelta
from loom_otel.live._feed import Done, FeedEvent, Partial, Subscription, Viewer
from loom_otel.live._hub import LiveReasoningHub
from loom_otel.live._record import read_calls
from loom_otel.live._sse import KEEPALIVE, delta_body, done_body, frame, partial_body, reset_body

__all__ = ["Authenticator", "bearer_authenticator", "create_app", "header_authenticator"]

KEEPALIVE_SECONDS: Final = 15.0
RETRY_AFTER_SECONDS: Final = 5
_NOT_FOUND: Final = {"error": "not found"}


def _not_found() -> Response:
    """The one answer for unknown, not yours, other tenant and unauthenticated alike."""
    return JSONResponse(_NOT_FOUND, status_code=404)


def _no_room(error: LiveSubscriberLimitError) -> Response:
    """429: this viewer holds its share of feeds; 503: the hub serves all it may."""
    if error.per_viewer:
        status, message = 429, f"too many live feeds open for this viewer (at most {error.limit}); close one"
    else:
        status, message = 503, f"the live view serves its maximum of {error.limit} feeds; try again later"
    return JSONResponse({"error": message}, status_code=status, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


class _Feed(StreamingResponse):
    """The SSE response of one subscription, which it closes however the response ends (a client gone
    before the first byte included): a feed never outlives its request to hold a place."""

    def __init__(self, body: AsyncIterator[bytes], subscription: Subscription) -> None:
        super().__init__(
            body, media_type="text/event-stream", headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        )
        self.subscription = subscription

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.subscription.close()


class _LiveView:
    def __init__(
        self,
        hub: LiveReasoningHub,
        store: ReasoningStore | None,
        source: ReasoningSource | None,
        authenticator: Authenticator,
        keepalive: float,
    ) -> None:
        self.hub = hub
        self.store = store
        self.source = source
        self.authenticator = authenticator
        self.keepalive = keepalive

    async def stream(self, request: Request) -> Response:
        execution_id = request.path_params["execution_id"]
        viewer = await authenticate(self.authenticator, request)
        try:
            subscription = self.hub.subscribe(execution_id, viewer) if viewer is not None else None
        except LiveSubscriberLimitError as error:
            return _no_room(error)
        if subscription is None:
            return _not_found()
        return _Feed(self._events(execution_id, subscription), subscription)

    async def _events(self, execution_id: str, subscription: Subscription) -> AsyncIterator[bytes]:
        try:
            while not subscription.closed:
                batch = await subscription.next_batch(self.keepalive)
                if not batch:
                    yield KEEPALIVE
                for event in batch:
                    for chunk in await self._render(execution_id, subscription.viewer, event):
                        yield chunk
        finally:
            subscription.close()

    async def _render(self, execution_id: str, viewer: Viewer, event: FeedEvent) -> list[bytes]:
        if isinstance(event, ReasoningDelta):
            return [frame("reasoning", delta_body(event))]
        if isinstance(event, TextDelta):
            return [frame("text", delta_body(event))]
        if isinstance(event, Partial):
            return [frame("reasoning-partial", partial_body(event))]
        if isinstance(event, Done):
            chunks = []
            if (event.replay or not event.streamed) and event.kept:
                chunks.append(await self._record_partial(event, viewer))
            return [*chunks, frame("done", {**done_body(event), "kept": event.kept and self._can_read})]
        return [frame("reset", reset_body(execution_id, event))]

    @property
    def _can_read(self) -> bool:
        return self.store is not None and self.source is not None

    async def _record_partial(self, done: Done, viewer: Viewer) -> bytes:
        call = done.call
        body = {**done_body(done), "source": "record", "truncated": False, "parts": []}
        if self.store is not None and self.source is not None:
            parts, truncated = await asyncio.to_thread(
                read_calls, self.source, self.store, execution_id=call.execution_id, tenant=viewer.tenant, calls=[done]
            )
            body.update(truncated=truncated, parts=parts)
        return frame("reasoning-partial", body)

    async def record(self, request: Request) -> Response:
        execution_id = request.path_params["execution_id"]
        viewer = await authenticate(self.authenticator, request)
        step = request.query_params.get("step") or None
        if viewer is None:
            return _not_found()
        calls = self.hub.readable(execution_id, viewer, step)
        if not calls and (step is not None or not self.hub.knows(execution_id, viewer)):
            return _not_found()
        body = {"execution": execution_id, "step": step, "kept": self._can_read, "truncated": False, "parts": []}
        if self.store is not None and self.source is not None:
            parts, truncated = await asyncio.to_thread(
                read_calls, self.source, self.store, execution_id=execution_id, tenant=viewer.tenant, calls=calls
            )
            body.update(truncated=truncated, parts=parts)
        return JSONResponse(body, headers={"Cache-Control": "no-store"})


def create_app(
    hub: LiveReasoningHub,
    *,
    store: ReasoningStore | None = None,
    source: ReasoningSource | None = None,
    authenticator: Authenticator | None = None,
    trusted_proxy: bool | None = None,
    keepalive: float = KEEPALIVE_SECONDS,
) -> Starlette:
    """The live view's ASGI app for ``hub``. ``store`` and ``source`` (the audit journal directory, or a
    collector file) are what the durable record is read from: the store and journal the instrumentors
    capture into. Without them, viewers are told no record was kept.

    ``authenticator`` proves who is asking; without one, ``trusted_proxy=True`` (default:
    ``LOOM_OTEL_LIVE_TRUSTED_PROXY``) declares that a trusted proxy sets ``X-Loom-Principal`` /
    ``X-Loom-Tenant`` (warned once). Neither, or both: ``ReasoningConfigError``. Feed caps are the
    hub's (``LiveReasoningHub(max_subscribers=..., max_subscribers_per_viewer=...)``)."""
    view = _LiveView(hub, store, source, resolve_authenticator(authenticator, trusted_proxy), keepalive)
    return Starlette(
        routes=[
            # an execution id may hold "/" (sent percent-encoded; the path arrives decoded)
            Route("/executions/{execution_id:path}/reasoning", view.stream, methods=["GET"]),
            Route("/executions/{execution_id:path}/reasoning/record", view.record, methods=["GET"]),
        ]
    )
