"""Google GenAI ``generate_content`` as the call skeleton's vendor (``loom_otel.core._calls._adapter``).

A public call may send several HTTP requests (automatic function calling, automatic continuation):
its ``CallHops`` (the call's ``Outgoing``) accumulates every request's response and carries the
continuation session, which plans each request when the per-request wrappers report it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from loom_otel.core import Reasoning
from loom_otel.core.vendor import (
    AccumulatorLayer,
    Capture,
    ModelCall,
    RequestInfo,
    ResponseInfo,
    ResultReaders,
    Runtime,
    StreamAccumulator,
)
from loom_otel.core.vendor_helpers import withhold_from_text
from loom_otel.instrumentation.google_genai._continuation import GeminiContinuation, GeminiSession
from loom_otel.instrumentation.google_genai._extractors import ResponseAccumulator, request_info, resumes
from loom_otel.instrumentation.google_genai._guard import check_gemini_request
from loom_otel.instrumentation.google_genai._readable import readable_config

__all__ = ["CallHops", "GeminiAdapter", "GeminiReaders", "hops_of"]


class CallHops:
    """One public call across its HTTP requests (the call's ``Outgoing``): the response accumulator and
    the continuation session.

    The call's execution is decided by its first request (``GeminiSession.prepare`` joins its lineage)."""

    __slots__ = ("asks_readable", "continuation", "emptied", "kwargs", "readable", "session", "turn")

    def __init__(
        self, continuation: GeminiContinuation | None, kwargs: dict[str, Any], *, asks_readable: bool = False
    ) -> None:
        self.continuation = continuation
        self.kwargs = kwargs
        self.session: GeminiSession | None = None
        self.asks_readable = asks_readable
        """``LOOM_OTEL_REQUEST_READABLE`` is on: a request without ``include_thoughts`` is sent with it."""
        self.readable = False
        """A request of this call was sent asking for the thoughts the application did not ask for."""
        self.emptied: set[int] = set()
        """Chunks (by id, while they are in flight) that held only the thoughts withheld: not yielded."""

    def attach(self, call: ModelCall) -> None:
        self.turn = ResponseAccumulator(call.request)
        if self.continuation is not None:
            self.session = self.continuation.session(call.request.provider, self.turn.produced)

    def put_back(self) -> list[str]:
        if self.session is None:
            return []
        return [*(text for hop in self.session.hops for text in hop.plan.put_back()), *self.session.pieces]

    def tap(self, accumulator: StreamAccumulator) -> StreamAccumulator:
        """A stream's accumulator (the call's ``turn``), under the session's layer when chunks lose thought
        text (redact mode) or thoughts only loom-otel asked for (the chunks left with nothing else are
        kept from the application: ``withheld``)."""
        if self.session is None:
            return accumulator
        if not self.asks_readable:
            return self.session.tap(accumulator, None)
        return _Withholding(self.session.tap(accumulator, self.withhold), self.withheld)

    def request(self, call: ModelCall, kwargs: dict[str, Any]) -> dict[str, Any]:
        """One HTTP request of the call is about to be built from ``kwargs`` (model, contents, config):
        the continuation pass decides what is sent (raises ``ReasoningContinuationError`` on a store
        failure)."""
        self.turn.begin_hop(resumes(kwargs))
        if self.session is None:
            return kwargs
        config = readable_config(kwargs.get("config")) if self.asks_readable else None
        if config is not None:  # DESIGN "Readable by request"
            kwargs = {**kwargs, "config": config}
            self.readable = True
        return self.session.prepare(call, kwargs)

    def withhold(self, chunk: Any) -> None:
        """A streamed chunk, after capture saw it: the thoughts only loom-otel asked for are taken out."""
        if self.readable and self.session is not None and self.session.withhold(chunk):
            self.emptied.add(id(chunk))

    def withheld(self, chunk: Any) -> bool:
        """Whether the chunk held nothing but withheld thoughts (the bare stream has no such chunk)."""
        if not self.emptied:
            return False
        found = id(chunk) in self.emptied
        self.emptied.discard(id(chunk))
        return found

    def response(self, response: Any) -> None:
        """The complete response of one HTTP request of a non-streamed call."""
        self.turn.feed(_read_body(response))

    def read(self, response: Any) -> tuple[list[Reasoning], ResponseInfo]:
        """The public call returned ``response``: the reasoning and facts of every request it made."""
        turn = self.turn
        if not turn.hops:  # the SDK did not go through the per-request method: the response is all there is
            turn.feed(_read_body(response))
        return turn.result()

    @property
    def blanks(self) -> bool:
        """Whether the application gets no readable thought text (redact mode), or none of the thoughts
        only loom-otel asked for."""
        session = self.session
        return session is not None and (session.adapter.redact or self.readable)

    def dropped(self, call: ModelCall, response: Any) -> None:
        """Gemini reports no drops of its own."""

    def bound(self, call: ModelCall, response: Any, capture: Capture | None, reasonings: Sequence[Reasoning]) -> None:
        if self.session is not None:
            self.session.record(call, capture, reasonings)

    def scrub(self, response: Any) -> None:
        """A whole call (redact mode): no readable thought text; the thoughts only loom-otel asked for
        are taken out. A stream's chunks went through the session's layer one by one."""
        session = self.session
        if session is None or isinstance(response, AccumulatorLayer):
            return
        session.scrub(response)
        if self.readable:
            session.withhold(response)


class _Withholding(AccumulatorLayer):
    """The session's layer, and which chunks held nothing but the thoughts withheld (the stream proxy
    keeps them from the application)."""

    def __init__(self, inner: StreamAccumulator, withheld: Callable[[Any], bool]) -> None:
        super().__init__(inner)
        self.feed: Callable[[Any], Sequence[tuple[int, str]]] = inner.feed
        self.withheld = withheld


def hops_of(call: ModelCall | None) -> CallHops | None:
    """The public call's state, for a per-request wrapper running inside it."""
    outgoing = call.outgoing if call is not None else None
    return outgoing if isinstance(outgoing, CallHops) else None


def _raw_body(response: Any) -> str | None:
    """The raw HTTP body of a response the SDK returned unread (``should_return_http_response``: only
    ``sdk_http_response`` is set, its ``body`` the JSON the server sent)."""
    if getattr(response, "candidates", None) is not None:
        return None
    body = getattr(getattr(response, "sdk_http_response", None), "body", None)
    return body if isinstance(body, str) and body else None


def _read_body(response: Any) -> Any:
    """The response, or the one its raw body holds, read as the SDK reads a body (its JSON field names)."""
    body = _raw_body(response)
    if body is None:
        return response
    from google.genai import types

    return types.GenerateContentResponse._from_response(response=json.loads(body), kwargs={})


class GeminiReaders(ResultReaders):
    """A whole call's response (every request's, through its ``CallHops``), a stream's chunks, and the
    response the SDK returns unread (``should_return_http_response``: its raw body is the raw form)."""

    def whole(self, call: ModelCall, outgoing: CallHops, response: Any) -> tuple[list[Reasoning], ResponseInfo]:
        return outgoing.read(response)

    def accumulator(self, call: ModelCall, result: Any) -> StreamAccumulator:
        hops = hops_of(call)
        assert hops is not None  # ``prepare`` always makes one
        return hops.turn

    def raw(self, result: Any) -> bool:
        return _raw_body(result) is not None

    def parse(self, raw: Any) -> Any:
        return raw  # ``CallHops.read`` reads the raw body

    def withhold_raw(self, raw: Any, texts: list[str]) -> None:
        raw.sdk_http_response.body = withhold_from_text(raw.sdk_http_response.body, texts)


class GeminiAdapter:
    """``Models.generate_content(_stream)`` (chats included: they call these) and ``AsyncModels``'."""

    readers: Final = GeminiReaders()

    def __init__(self, runtime: Runtime) -> None:
        self.continuation = GeminiContinuation(runtime) if runtime.enabled else None
        self.readable = runtime.enabled and runtime.request_readable == "summarized"

    def check_request(self, instance: Any, kwargs: Mapping[str, Any]) -> None:
        check_gemini_request(kwargs.get("contents"), kwargs.get("config"))

    def prepare(self, instance: Any, kwargs: dict[str, Any]) -> CallHops:
        return CallHops(self.continuation, kwargs, asks_readable=self.readable)

    def streams(self, kwargs: Mapping[str, Any]) -> bool:
        return False  # the stream methods are their own wrappers (they send when iterated)

    def request_info(self, instance: Any, kwargs: Mapping[str, Any], *, stream: bool) -> RequestInfo:
        readable = self.readable and readable_config(kwargs.get("config")) is not None
        return request_info(instance, kwargs, stream=stream, readable=readable)
