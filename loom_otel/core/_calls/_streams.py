"""Stream capture shared by every vendor: a mixin with the three hooks, and the sync and async wrapt
proxies built on it. Vendor packages supply only a ``StreamAccumulator`` for their chunk shapes (and,
through their ``Outgoing``, the layer it goes under: ``Outgoing.tap``). A stream's end, or its early
close, goes through the skeleton's one ``finish``, as a whole response does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from types import TracebackType
from typing import Any

import wrapt

from loom_otel.core._calls._adapter import Outgoing, StreamAccumulator
from loom_otel.core._calls._model_call import ModelCall, ResponseInfo
from loom_otel.core._calls._skeleton import failed, finish
from loom_otel.core._evidence import _attributes as attr
from loom_otel.core._evidence._model import Reasoning
from loom_otel.core._runtime._callbacks import logger

__all__ = ["AccumulatorLayer", "AsyncStreamProxy", "StreamCaptureMixin", "SyncStreamProxy"]


class AccumulatorLayer:
    """Base of an accumulator that adds vendor work (continuation, redaction) around the capture
    accumulator it wraps: ``text_deltas`` and ``result`` belong to the inner one."""

    def __init__(self, inner: StreamAccumulator) -> None:
        self._inner = inner

    @property
    def text_deltas(self) -> list[tuple[int, str]] | None:
        return self._inner.text_deltas

    @text_deltas.setter
    def text_deltas(self, value: list[tuple[int, str]] | None) -> None:
        self._inner.text_deltas = value

    def result(self) -> tuple[list[Reasoning], ResponseInfo]:
        return self._inner.result()


def _chunk_step(call: ModelCall, accumulator: StreamAccumulator) -> Callable[[Any], object] | None:
    """What each chunk goes through: the accumulator alone, with the live view, or nothing (``None``:
    the accumulator reads the whole response at the end). The live step holds what it uses in its
    closure (nothing of the proxy: no attribute read per chunk, and no reference cycle through it)."""
    feed = accumulator.feed
    observer = call.watched()
    if observer is None:
        return None if getattr(accumulator, "reads_whole_response", False) else feed
    text: list[tuple[int, str]] | None = None
    if observer.text:
        text = accumulator.text_deltas = []
    deliver, deliver_text = observer.reasoning_delta, observer.text_delta

    def live_step(chunk: Any) -> None:
        deltas = feed(chunk)
        if deltas:
            deliver(deltas)
        if text:
            deliver_text(text)
            text.clear()

    return live_step


class StreamCaptureMixin:
    """State lives in ``_self_*`` attributes (a plain attribute on a proxy writes through)."""

    _self_call: ModelCall
    _self_outgoing: Outgoing | None
    _self_accumulator: StreamAccumulator
    _self_step: Callable[[Any], object] | None
    _self_withheld: Callable[[Any], bool] | None

    def _start_capture(self, call: ModelCall, outgoing: Outgoing | None, accumulator: StreamAccumulator) -> None:
        """Per-stream state (the accumulator under the vendor's tap); the per-chunk path only reads what
        is resolved here once."""
        if outgoing is not None:
            accumulator = outgoing.tap(accumulator)
        self._self_call = call
        self._self_outgoing = outgoing
        self._self_accumulator = accumulator
        self._self_withheld = getattr(accumulator, "withheld", None)
        step = _chunk_step(call, accumulator)
        self._self_step = accumulator.feed if step is None and self._self_withheld is not None else step

    def _process_chunk(self, chunk: Any) -> None:
        step = self._self_step
        if step is not None:
            step(chunk)

    def _finish(self) -> None:
        """What was received goes through the skeleton's ``finish`` (the accumulator is the response its
        steps read), once."""
        call = self._self_call
        if not call.ended:
            accumulator = self._self_accumulator
            reasonings, response = accumulator.result()
            finish(call, self._self_outgoing, accumulator, reasonings, response)

    def _on_stream_end(self) -> None:
        """The vendor finished: capture fail-closed (the error surfaces where iteration ends)."""
        self._finish()

    def _on_stream_error(self, exc: BaseException) -> None:
        failed(self._self_call, self._self_outgoing, exc)

    def _on_stream_close(self) -> None:
        """Closed before the end: keep what the application already received; never raise from close."""
        call = self._self_call
        if call.ended:
            return
        call.span.set_attribute(attr.STREAM_OUTCOME, "closed_early")
        try:
            self._finish()
        except Exception as exc:
            logger.error("loom-otel: capture of an early-closed stream failed (%s)", type(exc).__name__)


class SyncStreamProxy(StreamCaptureMixin, wrapt.BaseObjectProxy[Any]):
    """Wraps a sync stream (iterator, context manager, ``close()``) and forwards everything else."""

    def __init__(
        self, wrapped: Any, call: ModelCall, outgoing: Outgoing | None, accumulator: StreamAccumulator
    ) -> None:
        super().__init__(wrapped)
        self._start_capture(call, outgoing, accumulator)

    def __iter__(self) -> Iterator[Any]:
        """A ``for`` loop gets a generator over the wrapped stream's own iterator: per chunk, one resume
        and the accumulator (``next()`` on the proxy itself goes through ``__next__``)."""
        return self._iterate()

    def _iterate(self) -> Iterator[Any]:
        take = self._self_step
        withheld = self._self_withheld
        try:
            chunks = iter(self.__wrapped__)
            for chunk in chunks:  # the first chunk: time to first chunk
                self._self_call.first_chunk()
                if take is not None:
                    take(chunk)
                if withheld is None or not withheld(chunk):
                    yield chunk
                break
            if take is None:
                yield from chunks
            elif withheld is None:
                for chunk in chunks:
                    take(chunk)
                    yield chunk
            else:
                for chunk in chunks:
                    take(chunk)
                    if not withheld(chunk):
                        yield chunk
        except GeneratorExit:
            raise  # the loop was left: close() or the proxy's end decides what is kept
        except BaseException as exc:
            self._on_stream_error(exc)
            raise
        self._on_stream_end()

    def __next__(self) -> Any:
        while True:
            try:
                chunk = self.__wrapped__.__next__()
            except StopIteration:
                self._on_stream_end()
                raise
            except BaseException as exc:
                self._on_stream_error(exc)
                raise
            self._self_call.first_chunk()
            self._process_chunk(chunk)
            withheld = self._self_withheld
            if withheld is None or not withheld(chunk):
                return chunk

    def __enter__(self) -> SyncStreamProxy:
        enter = getattr(self.__wrapped__, "__enter__", None)
        if enter is not None:
            enter()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            exit_ = getattr(self.__wrapped__, "__exit__", None)
            if exit_ is not None:
                exit_(exc_type, exc, tb)
            else:
                self.__wrapped__.close()
        finally:
            self._on_stream_close()

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._on_stream_close()

    def __del__(self) -> None:
        call = getattr(self, "_self_call", None)
        if call is not None and not call.ended:
            call.abandon("abandoned")


class AsyncStreamProxy(StreamCaptureMixin, wrapt.BaseObjectProxy[Any]):
    """The async twin: ``__anext__``, ``__aenter__``/``__aexit__`` and an awaitable ``close()``."""

    def __init__(
        self, wrapped: Any, call: ModelCall, outgoing: Outgoing | None, accumulator: StreamAccumulator
    ) -> None:
        super().__init__(wrapped)
        self._start_capture(call, outgoing, accumulator)

    def __aiter__(self) -> AsyncIterator[Any]:
        """``async for`` gets an async generator (one resume per chunk instead of a coroutine per
        ``__anext__``); ``__anext__`` stays for direct calls."""
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        take = self._self_step
        withheld = self._self_withheld
        first: Callable[[], None] | None = self._self_call.first_chunk
        try:
            async for chunk in self.__wrapped__:
                if first is not None:
                    first()
                    first = None
                if take is not None:
                    take(chunk)
                if withheld is None or not withheld(chunk):
                    yield chunk
        except GeneratorExit:
            raise
        except BaseException as exc:
            self._on_stream_error(exc)
            raise
        self._on_stream_end()

    async def __anext__(self) -> Any:
        while True:
            try:
                chunk = await self.__wrapped__.__anext__()
            except StopAsyncIteration:
                self._on_stream_end()
                raise
            except BaseException as exc:
                self._on_stream_error(exc)
                raise
            self._self_call.first_chunk()
            self._process_chunk(chunk)
            withheld = self._self_withheld
            if withheld is None or not withheld(chunk):
                return chunk

    async def __aenter__(self) -> AsyncStreamProxy:
        enter = getattr(self.__wrapped__, "__aenter__", None)
        if enter is not None:
            await enter()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            exit_ = getattr(self.__wrapped__, "__aexit__", None)
            if exit_ is not None:
                await exit_(exc_type, exc, tb)
            else:
                await self.close_wrapped()
        finally:
            self._on_stream_close()

    async def close_wrapped(self) -> None:
        closer = getattr(self.__wrapped__, "aclose", None) or self.__wrapped__.close
        await closer()

    async def close(self) -> None:
        try:
            await self.close_wrapped()
        finally:
            self._on_stream_close()

    async def aclose(self) -> None:
        await self.close()

    def __del__(self) -> None:
        call = getattr(self, "_self_call", None)
        if call is not None and not call.ended:
            call.abandon("abandoned")
