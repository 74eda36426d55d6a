"""The one dispatcher of what a wrapped SDK method returned, alike for every vendor (step 5 of
``_skeleton``): a vendor subclasses ``ResultReaders`` and gives only its readers; the dispatch
(``sync_result`` / ``async_result``) is core's.

What was returned is one of:

- a raw response (``raw``: ``with_raw_response`` / ``with_streaming_response``, an HTTP response the
  application reads itself): a whole one is parsed (``parse``) and finished as a whole response, and when
  the application must not read reasoning (``Outgoing.blanks``) its body loses the texts
  (``withhold_raw``); a streamed one gets capture on its body (``_raw_streams.tap_raw_body``, the vendor's
  ``decode`` reading each event as the SDK would);
- a stream (the call streams): its part that streams (``stream_of``) goes back under a stream proxy fed to
  the vendor's ``accumulator``, in the result's place (``restream``);
- a whole response: read (``whole``) and handed to the skeleton's ``finish``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from loom_otel.core._calls._adapter import Outgoing, StreamAccumulator
from loom_otel.core._calls._model_call import ModelCall, ResponseInfo
from loom_otel.core._calls._raw_streams import Decode, tap_raw_body
from loom_otel.core._calls._skeleton import finish
from loom_otel.core._calls._streams import AsyncStreamProxy, SyncStreamProxy
from loom_otel.core._calls._withheld import withhold_from_response
from loom_otel.core._evidence._model import Reasoning

__all__ = ["ResultReaders"]


class ResultReaders:
    """A vendor's readers of what its SDK returns, and core's dispatch over them. ``whole`` and
    ``accumulator`` are the vendor's to give; the other readers default to an SDK with no raw forms whose
    stream is what the method returned (Stainless-generated SDKs keep ``parse`` and ``withhold_raw``)."""

    def whole(self, call: ModelCall, outgoing: Any, response: Any) -> tuple[Sequence[Reasoning], ResponseInfo]:
        """A whole response's reasoning and facts (``outgoing``: the call's, the vendor's own type)."""
        raise NotImplementedError

    def accumulator(self, call: ModelCall, result: Any) -> StreamAccumulator:
        """The accumulator a stream (or a streamed raw response's events) of ``result`` is fed to."""
        raise NotImplementedError

    def raw(self, result: Any) -> bool:
        """Whether ``result`` is a raw response (an HTTP response the application reads itself)."""
        return False

    def parse(self, raw: Any) -> Any:
        """A whole raw response's parsed response (or an awaitable of it, async)."""
        return raw.parse()

    def decode(self, raw: Any) -> Decode:
        """How a streamed raw response's server-sent events are read (as the SDK's stream reads them)."""
        raise NotImplementedError

    def withhold_raw(self, raw: Any, texts: list[str]) -> None:
        """A whole raw response's body loses ``texts`` (the application must not read them)."""
        withhold_from_response(raw.http_response, texts)

    def stream_of(self, result: Any) -> Any | None:
        """The part of a streamed call's result that streams (``None``: none, the call ends as a whole)."""
        return result

    def restream(self, result: Any, proxy: Any) -> Any:
        """What the application gets: ``result`` with its stream under ``proxy``."""
        return proxy

    def sync_result(self, call: ModelCall, outgoing: Outgoing | None, result: Any) -> Any:
        """Dispatch what a sync method returned (a raw response, a stream, a whole response)."""
        if self.raw(result):
            if call.request.stream:
                self._tap(call, outgoing, result, asynchronous=False)
            else:
                self._finish_raw(call, outgoing, result, self.parse(result))
            return result
        stream = self.stream_of(result) if call.request.stream else None
        if stream is not None:
            return self.restream(result, SyncStreamProxy(stream, call, outgoing, self.accumulator(call, result)))
        self._finish(call, outgoing, result)
        return result

    async def async_result(self, call: ModelCall, outgoing: Outgoing | None, result: Any) -> Any:
        """The async twin of ``sync_result`` (a raw response's ``parse`` may be sync or a coroutine)."""
        if self.raw(result):
            if call.request.stream:
                self._tap(call, outgoing, result, asynchronous=True)
            else:
                parsed = self.parse(result)
                self._finish_raw(call, outgoing, result, await parsed if inspect.isawaitable(parsed) else parsed)
            return result
        stream = self.stream_of(result) if call.request.stream else None
        if stream is not None:
            return self.restream(result, AsyncStreamProxy(stream, call, outgoing, self.accumulator(call, result)))
        self._finish(call, outgoing, result)
        return result

    def _finish(self, call: ModelCall, outgoing: Outgoing | None, response: Any) -> Sequence[Reasoning]:
        reasonings, info = self.whole(call, outgoing, response)
        finish(call, outgoing, response, reasonings, info)
        return reasonings

    def _finish_raw(self, call: ModelCall, outgoing: Outgoing | None, raw: Any, parsed: Any) -> None:
        reasonings = self._finish(call, outgoing, parsed)
        if outgoing is not None and outgoing.blanks:
            self.withhold_raw(raw, [r.text for r in reasonings if r.text])

    def _tap(self, call: ModelCall, outgoing: Outgoing | None, raw: Any, *, asynchronous: bool) -> None:
        blanks = outgoing is not None and outgoing.blanks
        accumulator = self.accumulator(call, raw)
        decode = self.decode(raw)
        tap_raw_body(raw.http_response, call, outgoing, accumulator, decode, rewrite=blanks, asynchronous=asynchronous)
