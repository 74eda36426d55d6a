"""A streamed response the application reads as HTTP (``with_raw_response`` / ``with_streaming_response``
with ``stream=True``): capture sits on the body itself, the byte stream under the HTTP response, so every
way of reading it (``iter_lines``, ``iter_bytes``, ``iter_text``, ``read``, ``json``, ``parse()`` and the
SDK stream it returns, their async twins) goes through it and capture sees the events the application sees.

Each server-sent event is read as the SDK's stream would read it (the vendor's ``decode``) and fed to the
same accumulator, under the same tap, as a parsed stream's chunks. Kept as they are, the bytes go on
unchanged. When the application must not read reasoning (``rewrite``: redact mode, a summary only
loom-otel asked for), the body goes on event by event: an event the tap withholds is left out, and one it
fed is sent as the tap left it (blanked), re-serialized; the body is then the decoded one (its
``content-encoding`` no longer applies, and the response decodes nothing). The body's end, its close
before the end (a context manager left without reading included), and a failure reading it end the call
as a parsed stream's do (``StreamCaptureMixin``)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Final

import wrapt

from loom_otel.core._calls._adapter import Outgoing, StreamAccumulator
from loom_otel.core._calls._model_call import ModelCall
from loom_otel.core._calls._streams import StreamCaptureMixin

__all__ = ["END_OF_STREAM", "Decode", "tap_raw_body"]

END_OF_STREAM: Final = object()
"""What ``Decode`` gives for the vendor's end of the stream (``[DONE]``), after which the SDK's stream
reads no further: the call ends there, as a parsed stream's does."""

Decode = Callable[[str | None, str], Any]
"""A vendor's reading of one server-sent event (its ``event`` field, its data): the chunk the SDK's stream
would yield for it, ``END_OF_STREAM``, the exception the SDK's stream raises for it (an error event: the
call fails with it, the application reading bytes gets them as they are), or ``None`` for an event that
carries nothing (a ping)."""

_BOUNDARY: Final = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_LINE: Final = re.compile(r"\r\n|\n|\r")


def tap_raw_body(
    http_response: Any,
    call: ModelCall,
    outgoing: Outgoing | None,
    accumulator: StreamAccumulator,
    decode: Decode,
    *,
    rewrite: bool,
    asynchronous: bool,
) -> None:
    """Put capture on the unread body of ``http_response`` (its ``stream``); a body read already (a
    mock transport's) is read whole now, and in redact mode replaced."""
    content = getattr(http_response, "_content", None)
    if isinstance(content, bytes):
        whole = _SyncRawBody([content], call, outgoing, accumulator, decode=decode, decoder=None, rewrite=rewrite)
        read = b"".join(whole)
        if rewrite:
            http_response._content = read
            http_response.__dict__.pop("_text", None)
        return
    decoder = _content_decoder(http_response, http_response.headers.get("content-encoding", ""))
    if rewrite and decoder is not None:  # the body handed on is the decoded one
        http_response._decoder = _content_decoder(http_response, "identity")
    body = _AsyncRawBody if asynchronous else _SyncRawBody
    http_response.stream = body(
        http_response.stream, call, outgoing, accumulator, decode=decode, decoder=decoder, rewrite=rewrite
    )


def _content_decoder(response: Any, encoding: str) -> Any:
    """A new content decoder of the response's own HTTP library (httpx or httpx2) for ``encoding``;
    ``None`` for none."""
    if not encoding.strip():
        return None
    return type(response)(200, headers={"content-encoding": encoding})._get_content_decoder()


class _Events:
    """The body's server-sent events as they complete: each fed to the tapped accumulator, and (when
    ``rewrite``) the bytes the application gets instead of the body's."""

    def __init__(self, body: _RawBody, decode: Decode, decoder: Any, rewrite: bool) -> None:
        self._body = body
        self._decode = decode
        self._decoder = decoder
        self._rewrite = rewrite
        self._pending = b""

    def bytes_in(self, raw: bytes) -> bytes:
        """Read ``raw`` (as received); the bytes to hand on."""
        out = self._events(_joined(self._decoder.decode(raw)) if self._decoder is not None else raw, final=False)
        return out if self._rewrite else raw

    def end(self) -> bytes:
        data = _joined(self._decoder.flush()) if self._decoder is not None else b""
        return self._events(data, final=True)

    def _events(self, data: bytes, *, final: bool) -> bytes:
        pending = self._pending + data
        out: list[bytes] = []
        start = 0
        for boundary in _BOUNDARY.finditer(pending):
            out.append(self._event(pending[start : boundary.end()]))
            start = boundary.end()
        rest = pending[start:]
        if final and rest.strip():
            out.append(self._event(rest))
            rest = b""
        self._pending = rest
        return b"".join(out) if self._rewrite else b""

    def _event(self, raw: bytes) -> bytes:
        name: str | None = None
        data: list[str] = []
        for line in _LINE.split(raw.decode("utf-8", "replace")):
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        chunk = self._decode(name, "\n".join(data)) if data else None
        body = self._body
        if isinstance(chunk, BaseException):
            body._on_stream_error(chunk)
            return raw
        if chunk is None or chunk is END_OF_STREAM:
            if chunk is END_OF_STREAM:
                body._on_stream_end()
            return raw
        body._self_call.first_chunk()
        body._process_chunk(chunk)
        if not self._rewrite:
            return raw
        withheld = body._self_withheld
        if withheld is not None and withheld(chunk):
            return b""
        head = f"event: {name}\n" if name is not None else ""
        return f"{head}data: {_serialized(chunk)}\n\n".encode()


def _joined(decoded: Any) -> bytes:
    """A decoder's output: bytes (httpx), or an iterable of bytes (httpx2)."""
    return decoded if isinstance(decoded, bytes) else b"".join(decoded)


def _serialized(chunk: Any) -> str:
    """An SDK chunk as it stands after the tap (its blanked fields set, the rest as received)."""
    dumped = chunk.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return json.dumps(dumped, ensure_ascii=False, separators=(",", ":"))


class _RawBody(StreamCaptureMixin, wrapt.BaseObjectProxy[Any]):
    def __init__(
        self,
        stream: Any,
        call: ModelCall,
        outgoing: Outgoing | None,
        accumulator: StreamAccumulator,
        *,
        decode: Decode,
        decoder: Any,
        rewrite: bool,
    ) -> None:
        super().__init__(stream)
        self._start_capture(call, outgoing, accumulator)
        if self._self_step is None:  # every event is read here, the whole response included
            self._self_step = self._self_accumulator.feed
        self._self_events = _Events(self, decode, decoder, rewrite)

    def __del__(self) -> None:
        call = getattr(self, "_self_call", None)
        if call is not None and not call.ended:
            call.abandon("abandoned")


class _SyncRawBody(_RawBody):
    def __iter__(self) -> Iterator[bytes]:
        events = self._self_events
        try:
            for raw in self.__wrapped__:
                out = events.bytes_in(raw)
                if out:
                    yield out
            out = events.end()
        except GeneratorExit:
            raise  # the reader stopped: the response's close decides what is kept
        except BaseException as exc:
            self._on_stream_error(exc)
            raise
        self._on_stream_end()
        if out:
            yield out

    def close(self) -> None:
        try:
            self.__wrapped__.close()
        finally:
            self._on_stream_close()


class _AsyncRawBody(_RawBody):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        events = self._self_events
        try:
            async for raw in self.__wrapped__:
                out = events.bytes_in(raw)
                if out:
                    yield out
            out = events.end()
        except GeneratorExit:
            raise
        except BaseException as exc:
            self._on_stream_error(exc)
            raise
        self._on_stream_end()
        if out:
            yield out

    async def aclose(self) -> None:
        try:
            await self.__wrapped__.aclose()
        finally:
            self._on_stream_close()
