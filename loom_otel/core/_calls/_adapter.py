"""The contract a vendor package supplies to the call skeleton (``loom_otel.core._calls._skeleton``).

A vendor maps its SDK's shapes; the skeleton runs the one sequence every wrapped method goes through.
The contract, in the order the skeleton uses it:

- ``VendorAdapter.check_request``: the request guard (DESIGN "Reading and erasure"), before anything else;
- ``VendorAdapter.prepare``: the continuation pass on the request the SDK is about to serialize (an
  ``Outgoing``, or ``None`` without continuation); it finds the request's lineage (whose reasoning
  blocks it carries), which the call joins when its span starts (``Outgoing.attach``);
- ``VendorAdapter.request_info`` / ``streams``: what the span says at start;
- ``VendorAdapter.readers``: what the wrapped method returned, dispatched by core alike for every vendor
  (``_results.ResultReaders``, the vendor giving its readers): a whole response goes to the skeleton's
  ``finish`` with its reasoning and facts, a stream (a raw one's body included) gets a proxy with the
  vendor's ``StreamAccumulator``, under the ``Outgoing``'s ``tap``, whose end goes to the same ``finish``;
- ``finish`` then runs the ``Outgoing``'s steps in one order: ``dropped`` (the vendor's own drops), the
  capture (``_skeleton._complete``), ``bound`` (the bindings of what was produced), ``scrub`` (what the
  application gets loses readable reasoning, in redact mode or when only loom-otel asked for it).

The steps get ``response``: the whole response, or at a stream's end the accumulator the stream fed
(the vendor's tap, which kept what its steps read, or the vendor's reader of the SDK's own snapshot).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from loom_otel.core._calls._capture import Capture
    from loom_otel.core._calls._model_call import ModelCall, RequestInfo, ResponseInfo
    from loom_otel.core._continuation._rule import Plan
    from loom_otel.core._evidence._model import Reasoning
    from loom_otel.core._runtime._config import Runtime

__all__ = ["Outgoing", "PlannedOutgoing", "Results", "StreamAccumulator", "VendorAdapter"]


class StreamAccumulator(Protocol):
    """Rebuilds the vendor's reasoning from its stream chunks, in vendor order.

    ``text_deltas`` is ``None`` unless the live view carries text (``live_text``): the stream then sets
    a list, ``feed`` appends the answer text deltas of each chunk to it (block index, text) and the
    stream drains it after every chunk. Otherwise ``feed`` pays one ``is None`` test per text delta.

    An accumulator whose ``result`` reads the whole response from elsewhere (the SDK's own snapshot)
    sets ``reads_whole_response = True``: a loop over the stream then hands chunks straight through
    (``feed`` is still called by ``next()`` and whenever the live view needs the chunks).

    An accumulator with a ``withheld(chunk) -> bool`` attribute (not ``None``) keeps the chunks it says
    from the application, after ``feed`` saw them: events a bare request would not have produced
    (DESIGN "Readable by request").
    """

    text_deltas: list[tuple[int, str]] | None

    def feed(self, chunk: Any) -> Sequence[tuple[int, str]]:
        """Take one chunk; return the readable reasoning deltas it carried as (block index, text)."""
        ...

    def result(self) -> tuple[list[Reasoning], ResponseInfo]:
        """The reasoning blocks and response facts received so far."""
        ...


class Outgoing(Protocol):
    """One request after the continuation pass, and the vendor's steps of the call's finish."""

    @property
    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments to send (the application's own when nothing changed)."""
        ...

    @property
    def blanks(self) -> bool:
        """Whether the application gets the response without its readable reasoning (redact mode, or a
        summary only loom-otel asked for): a raw response's body loses it too."""
        ...

    def attach(self, call: ModelCall) -> None:
        """The call's span exists: the call joins the request's lineage (``call.join``: the execution of
        the request's latest reasoning block whose recorded binding holds, ``Plan.lineage``) and the
        pass's decisions become span events. A vendor that plans per HTTP request (Gemini) joins at its
        first request instead."""
        ...

    def put_back(self) -> list[str]:
        """The readable texts loom-otel put into the request (taken out of an SDK error or a returned
        object's HTTP request, in any mode)."""
        ...

    def tap(self, accumulator: StreamAccumulator) -> StreamAccumulator:
        """A stream's accumulator, as it is or under the vendor's layer, which per chunk, after capture
        saw it, blanks the readable reasoning the application must not get (a stream's scrub: nothing
        is left for ``scrub`` at its end) and keeps what ``dropped`` and ``bound`` read at the end. The
        layer holds neither the call nor anything that holds it (no reference cycle)."""
        ...

    def dropped(self, call: ModelCall, response: Any) -> None:
        """Before capture: what the vendor dropped of the request itself, as span events."""
        ...

    def bound(self, call: ModelCall, response: Any, capture: Capture | None, reasonings: Sequence[Reasoning]) -> None:
        """After capture (``capture`` of ``reasonings``, parts in their order): the bindings of what the
        response produced are recorded (in memory at once; on disk before the call returns, or by the
        journal's group commit under ``batch``)."""
        ...

    def scrub(self, response: Any) -> None:
        """Last: the application gets the response without the reasoning text it must not hold (redact
        mode, or a summary only loom-otel asked for); a stream's tap blanked each chunk already."""
        ...


OutgoingT_co = TypeVar("OutgoingT_co", bound=Outgoing, covariant=True)


class Results(Protocol):
    """Core's dispatch of what a wrapped method returned (``_results.ResultReaders`` over the vendor's
    readers): a whole response finished, a stream under a proxy that finishes at its end."""

    def sync_result(self, call: ModelCall, outgoing: Outgoing | None, result: Any) -> Any: ...

    async def async_result(self, call: ModelCall, outgoing: Outgoing | None, result: Any) -> Any: ...


class VendorAdapter(Protocol[OutgoingT_co]):
    """What one vendor supplies (one instance per instrumentor, built with the runtime); ``OutgoingT_co`` is its
    ``Outgoing``."""

    def __init__(self, runtime: Runtime) -> None: ...

    def check_request(self, instance: Any, kwargs: Mapping[str, Any]) -> None:
        """Raise ``ReasoningConfigError`` for reasoning in an instruction position (the request guard)."""
        ...

    def prepare(self, instance: Any, kwargs: dict[str, Any]) -> OutgoingT_co | None:
        """The continuation pass (raises ``ReasoningContinuationError`` when the store fails)."""
        ...

    def streams(self, kwargs: Mapping[str, Any]) -> bool:
        """Whether the wrapped method returns a stream for these arguments."""
        ...

    def request_info(self, instance: Any, kwargs: Mapping[str, Any], *, stream: bool) -> RequestInfo: ...

    @property
    def readers(self) -> Results:
        """The vendor's readers of what its SDK returns, under core's one dispatch."""
        ...


class PlannedOutgoing:
    """The ``Outgoing`` steps' defaults, for a vendor whose whole request the rule plans once per call
    (one ``Plan``): the call joins the plan's lineage and the plan's decisions become span events, each
    block named by ``path`` (a Messages-shaped request's ``messages.{i}.content.{j}`` unless the vendor
    says otherwise); the texts put back are the plan's; in redact mode the application gets no readable
    reasoning. The vendor drops nothing of its own, a stream goes as it is, and nothing is bound or
    scrubbed until the vendor says how (its subclass overrides the steps it has)."""

    __slots__ = ("kwargs", "plan", "redact")

    def __init__(self, kwargs: dict[str, Any], plan: Plan, *, redact: bool) -> None:
        self.kwargs = kwargs
        self.plan = plan
        self.redact = redact

    @property
    def blanks(self) -> bool:
        """Whether the application gets the reasoning without its text (redact mode)."""
        return self.redact

    def path(self, i: int, j: int) -> str:
        """How an event names block ``j`` of message ``i``."""
        return f"messages.{i}.content.{j}"

    def put_back(self) -> list[str]:
        return self.plan.put_back()

    def attach(self, call: ModelCall) -> None:
        """The call joins the request's lineage; the rule's decisions become span events."""
        call.join(self.plan.lineage)
        self.plan.emit(call, self.path)

    def tap(self, accumulator: StreamAccumulator) -> StreamAccumulator:
        return accumulator

    def dropped(self, call: ModelCall, response: Any) -> None:
        """The vendor reports no drops of its own."""

    def bound(self, call: ModelCall, response: Any, capture: Capture | None, reasonings: Sequence[Reasoning]) -> None:
        """Nothing to bind unless the vendor records its answer's blocks."""

    def scrub(self, response: Any) -> None:
        """Nothing to take out unless the vendor hands back readable reasoning."""
