"""The in-process transport: ``httpx2.MockTransport`` in front of ``Simulator.handle`` (given, not imported)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping

import httpx2

from ._exchange import Reply

Handle = Callable[[str, str, Mapping[str, str], Mapping[str, str], bytes], Reply]
"""Answers one HTTP request: method, path, query, headers, body (``Simulator.handle``)."""


class _ReplyStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """Yields a streamed reply chunk by chunk; an aborted reply ends with ``httpx2.ReadError``."""

    def __init__(self, reply: Reply, request: httpx2.Request) -> None:
        self._reply = reply
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        yield from self._reply.chunks
        if self._reply.abort:
            raise httpx2.ReadError("simulated connection drop mid-stream", request=self._request)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._reply.chunks:
            yield chunk
        if self._reply.abort:
            raise httpx2.ReadError("simulated connection drop mid-stream", request=self._request)


def mock_transport(handle: Handle) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        reply = handle(
            request.method,
            request.url.path,
            dict(request.url.params),
            dict(request.headers),
            request.content,
        )
        headers = {**reply.headers, "content-type": reply.content_type}
        if reply.stream:
            return httpx2.Response(reply.status, headers=headers, stream=_ReplyStream(reply, request))
        return httpx2.Response(reply.status, headers=headers, content=reply.body)

    return httpx2.MockTransport(handler)
