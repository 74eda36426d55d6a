"""The in-process transport: ``httpx2.MockTransport`` in front of ``Simulator.handle`` (given, not imported);
or the same built of httpx, for an SDK release that sends with httpx (anthropic < 1)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from types import ModuleType
from typing import Any

import httpx2

from ._exchange import Reply

Handle = Callable[[str, str, Mapping[str, str], Mapping[str, str], bytes], Reply]
"""Answers one HTTP request: method, path, query, headers, body (``Simulator.handle``)."""


class _Replay:
    """Yields a streamed reply chunk by chunk; an aborted reply ends with the library's ``ReadError``."""

    def __init__(self, reply: Reply, request: Any) -> None:
        self._reply = reply
        self._request = request

    _read_error: Callable[..., Exception] = httpx2.ReadError

    def __iter__(self) -> Iterator[bytes]:
        yield from self._reply.chunks
        if self._reply.abort:
            raise self._read_error("simulated connection drop mid-stream", request=self._request)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._reply.chunks:
            yield chunk
        if self._reply.abort:
            raise self._read_error("simulated connection drop mid-stream", request=self._request)


class _ReplyStream(_Replay, httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """The reply's body as httpx2 reads a stream."""


@functools.cache
def _reply_stream_of(http: ModuleType) -> type[_Replay]:
    """The reply stream of ``http`` (httpx2, or httpx: the same byte-stream classes and errors)."""
    if http is httpx2:
        return _ReplyStream
    bases = (_Replay, http.SyncByteStream, http.AsyncByteStream)
    stream: type[_Replay] = type("_ReplyStream", bases, {"_read_error": http.ReadError})
    return stream


def mock_transport(handle: Handle, library: ModuleType | None = None) -> Any:
    """A ``MockTransport`` of ``library`` (httpx2 by default, or httpx) answering through ``handle``."""
    http = library or httpx2
    reply_stream = _reply_stream_of(http)

    def handler(request: Any) -> Any:
        reply = handle(
            request.method,
            request.url.path,
            dict(request.url.params),
            dict(request.headers),
            request.content,
        )
        headers = {**reply.headers, "content-type": reply.content_type}
        if reply.stream:
            return http.Response(reply.status, headers=headers, stream=reply_stream(reply, request))
        return http.Response(reply.status, headers=headers, content=reply.body)

    return http.MockTransport(handler)
