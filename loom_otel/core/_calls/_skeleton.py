"""The one call sequence every wrapped SDK method runs, for every vendor (``_adapter.VendorAdapter``):

1. guard: ``check_request`` refuses reasoning in an instruction position;
2. prepare: the continuation pass decides what is sent and finds the request's lineage;
3. start: the GenAI span starts, the call's execution is decided (``ModelCall.join``), the pass's
   decisions become span events;
4. send: the SDK method runs with the span (and the call) current, below any other GenAI
   instrumentation's wrapper of it (one span per call); a failure ends the call with its error type
   and is re-raised unchanged;
5. finish: the vendor's ``sync_result`` / ``async_result`` captures a complete response (fail-closed) or
   wraps the stream, whose proxy captures at its end.

Methods that send later than they are called (a stream manager sends when entered, a generator when
iterated) run steps 1-2 at the call and 3-5 when they send, through ``prepare`` and ``start``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.instrumentation.utils import is_instrumentation_enabled

from loom_otel.core._calls._adapter import Outgoing
from loom_otel.core._calls._handler import ReasoningHandler
from loom_otel.core._calls._model_call import ModelCall
from loom_otel.core._calls._peers import peer_outside, without_peers
from loom_otel.core._calls._withheld import withhold_from_exception, withhold_from_request

__all__ = ["Wrapper", "active", "async_method", "delivered", "failed", "prepare", "sent", "start", "sync_method"]

Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]
"""A wrapt wrapper: ``traced_method(wrapped, instance, args, kwargs)``."""


def active(handler: ReasoningHandler) -> bool:
    """Capture is on and instrumentation is not suppressed in this context."""
    return handler.runtime.enabled and is_instrumentation_enabled()


def prepare(handler: ReasoningHandler, instance: Any, kwargs: dict[str, Any]) -> Outgoing | None:
    """Steps 1 and 2: the request guard, then the continuation pass."""
    adapter = handler.adapter
    adapter.check_request(instance, kwargs)
    return adapter.prepare(instance, kwargs)


def start(
    handler: ReasoningHandler,
    instance: Any,
    kwargs: dict[str, Any],
    outgoing: Outgoing | None,
    *,
    stream: bool,
    wrapped: object = None,
) -> ModelCall:
    """Step 3: the span starts (one GenAI span per call, beside other instrumentations of ``wrapped``);
    the call joins the request's lineage (else its identity is decided now); the decisions become
    events."""
    request = handler.adapter.request_info(instance, kwargs, stream=stream)
    call = handler.call(request, peer_outside=peer_outside(wrapped, instance))
    call.outgoing = outgoing
    if outgoing is None:
        call.join(None)
    else:
        outgoing.attach(call)
    return call


def sent(kwargs: dict[str, Any], outgoing: Outgoing | None) -> dict[str, Any]:
    """The keyword arguments the SDK gets."""
    return kwargs if outgoing is None else outgoing.kwargs


def failed(call: ModelCall, exc: BaseException) -> None:
    """The SDK raised: the call ends with the error type; the texts loom-otel put back into the request
    (redact mode, or a block the application altered in keep mode) are taken out of the exception (its
    message, body, request and response) before the application gets it, unchanged otherwise."""
    call.fail(exc)
    outgoing = call.outgoing
    if outgoing is not None:
        withhold_from_exception(exc, outgoing.put_back())


def delivered(call: ModelCall, result: Any) -> Any:
    """The SDK returned ``result``: the texts loom-otel put back into the request are taken out of the
    HTTP request it holds (a raw response's ``http_request``, a stream's ``response.request``)."""
    outgoing = call.outgoing
    if outgoing is not None:
        texts = outgoing.put_back()
        if texts:
            withhold_from_request(result, texts)
    return result


def sync_method(handler: ReasoningHandler) -> Wrapper:
    """Steps 1-5 for a sync method that sends when called."""

    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not active(handler):
            return wrapped(*args, **kwargs)
        adapter = handler.adapter
        outgoing = prepare(handler, instance, kwargs)
        call = start(handler, instance, kwargs, outgoing, stream=adapter.streams(kwargs), wrapped=wrapped)
        try:
            with call.activate():
                result = without_peers(wrapped)(*args, **sent(kwargs, outgoing))
        except BaseException as exc:
            failed(call, exc)
            raise
        return adapter.sync_result(call, delivered(call, result))

    return traced_method


def async_method(handler: ReasoningHandler) -> Wrapper:
    """Steps 1-5 for an async method (it returns an awaitable; nothing runs until it is awaited)."""

    def traced_method(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not active(handler):
            return wrapped(*args, **kwargs)

        async def send() -> Any:
            adapter = handler.adapter
            outgoing = prepare(handler, instance, kwargs)
            call = start(handler, instance, kwargs, outgoing, stream=adapter.streams(kwargs), wrapped=wrapped)
            try:
                with call.activate():
                    result = await without_peers(wrapped)(*args, **sent(kwargs, outgoing))
            except BaseException as exc:
                failed(call, exc)
                raise
            return await adapter.async_result(call, delivered(call, result))

        return send()

    return traced_method
