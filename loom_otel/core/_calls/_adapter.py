"""The contract a vendor package supplies to the call skeleton (``loom_otel.core._calls._skeleton``).

A vendor maps its SDK's shapes; the skeleton runs the one sequence every wrapped method goes through.
The contract, in the order the skeleton uses it:

- ``check_request``: the request guard (DESIGN "Reading and erasure"), before anything else;
- ``prepare``: the continuation pass on the request the SDK is about to serialize (an ``Outgoing``, or
  ``None`` without continuation); it finds the request's lineage (whose reasoning blocks it carries),
  which the call joins when its span starts (``Outgoing.attach``);
- ``request_info`` / ``streams``: what the span says at start;
- ``sync_result`` / ``async_result``: what the wrapped method returned, ended or wrapped: a complete
  response is captured (``ModelCall.complete``), a stream gets a proxy with the vendor's accumulator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from loom_otel.core._calls._model_call import ModelCall, RequestInfo
    from loom_otel.core._config import Runtime

__all__ = ["Outgoing", "VendorAdapter"]


class Outgoing(Protocol):
    """One request after the continuation pass."""

    @property
    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments to send (the application's own when nothing changed)."""
        ...

    def attach(self, call: ModelCall) -> None:
        """The call's span exists: the call joins the request's lineage (``call.join``: the execution of
        the request's latest reasoning block whose recorded binding holds, ``Plan.lineage``), the pass's
        decisions become span events, and the capture is hooked. A vendor that plans per HTTP request
        (Gemini) joins at its first request instead."""
        ...

    def put_back(self) -> list[str]:
        """The readable texts loom-otel put into the request (taken out of an SDK error or a returned
        object's HTTP request, in any mode)."""
        ...


class VendorAdapter(Protocol):
    """What one vendor supplies (one instance per instrumentor, built with the runtime)."""

    def __init__(self, runtime: Runtime) -> None: ...

    def check_request(self, instance: Any, kwargs: Mapping[str, Any]) -> None:
        """Raise ``ReasoningConfigError`` for reasoning in an instruction position (the request guard)."""
        ...

    def prepare(self, instance: Any, kwargs: dict[str, Any]) -> Outgoing | None:
        """The continuation pass (raises ``ReasoningContinuationError`` when the store fails)."""
        ...

    def streams(self, kwargs: Mapping[str, Any]) -> bool:
        """Whether the wrapped method returns a stream for these arguments."""
        ...

    def request_info(self, instance: Any, kwargs: Mapping[str, Any], *, stream: bool) -> RequestInfo: ...

    def sync_result(self, call: ModelCall, result: Any) -> Any:
        """End the call with a complete response, or wrap the stream it returned."""
        ...

    async def async_result(self, call: ModelCall, result: Any) -> Any:
        """The async twin of ``sync_result``."""
        ...
