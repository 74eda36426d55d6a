"""The simulator's transport-neutral request and reply records, and helpers to build replies."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the vendor received it: ``body`` is the parsed JSON (``None`` if not JSON)."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: Any
    vendor: str = ""

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass(frozen=True, slots=True)
class Reply:
    """A response: one body, or (``stream=True``) chunks written and flushed one by one.

    ``abort=True`` ends the stream abruptly after the chunks (a transport error on the client).
    """

    status: int
    content_type: str
    chunks: tuple[bytes, ...]
    stream: bool = False
    abort: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


def json_reply(payload: object, status: int = 200, headers: Mapping[str, str] | None = None) -> Reply:
    return Reply(status, "application/json", (json.dumps(payload).encode(),), headers=dict(headers or {}))


def sse_reply(frames: list[bytes], *, abort: bool = False) -> Reply:
    return Reply(200, "text/event-stream", tuple(frames), stream=True, abort=abort)


def sse_frame(data: object, event: str | None = None, *, newline: str = "\n") -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}{newline}" if event is not None else ""
    return f"{head}data: {text}{newline}{newline}".encode()


def split_text(text: str, parts: int) -> list[str]:
    """Split ``text`` into ``parts`` contiguous pieces (fewer if the text is shorter); none empty."""
    if not text:
        return []
    parts = max(1, min(parts, len(text)))
    size, extra = divmod(len(text), parts)
    pieces: list[str] = []
    start = 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0
