"""``Simulator``: one deterministic fake vendor serving the Anthropic, Gemini and OpenAI protocols."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from . import _anthropic, _bedrock, _gemini, _openai_chat, _openai_responses
from ._clients import ClientFactories
from ._exchange import RecordedRequest, Reply, estimate_tokens, json_reply
from ._script import Script
from ._signing import Signer

if TYPE_CHECKING:
    import httpx2

_DEFAULT_SECRET: Final = b"loom-otel-simulator"
_ANTHROPIC_PATHS: Final = frozenset({"/v1/messages", "/v1/messages/count_tokens"})
_CHAT_PATHS: Final = frozenset({"/v1/chat/completions", "/chat/completions"})
_RESPONSES_PATHS: Final = frozenset({"/v1/responses", "/responses"})


def _vendor(path: str) -> str:
    if path in _ANTHROPIC_PATHS:
        return "anthropic"
    if _gemini.ROUTE.match(path):
        return "gemini"
    if _bedrock.ROUTE.match(path):
        return "bedrock"
    if path in _CHAT_PATHS:
        return "openai.chat"
    if path in _RESPONSES_PATHS:
        return "openai.responses"
    return ""


_ERRORS: Final[dict[str, Callable[[int, str], Reply]]] = {
    "anthropic": _anthropic.error_reply,
    "gemini": _gemini.error_reply,
    "bedrock": _bedrock.error_reply,
    "openai.chat": _openai_chat.error_reply,
    "openai.responses": _openai_chat.error_reply,
    "": lambda status, message: json_reply({"error": {"message": message}}, status),
}


class Simulator(ClientFactories):
    """A deterministic fake of four vendor HTTP APIs (Bedrock Converse: ``_bedrock``); no network, no API key.

    ``strict`` enforces the vendors' reasoning rules on what it receives (signatures bound to their
    prefix, Anthropic tool loops, Gemini current-turn signatures, OpenAI ``input_transformations``).
    ``reasoning_text`` replaces the default reasoning (pad it to about ``thinking_size`` bytes);
    streamed reasoning comes in ``stream_chunks`` deltas; the model calls a tool while fewer than
    ``max_tool_rounds`` tool results were given in the current turn; ``redacted`` adds a
    ``redacted_thinking`` block to Anthropic answers, ``interleaved`` thinks between Anthropic tool
    calls; ``reasoning_field`` names the Chat Completions field (``reasoning_content`` or ``reasoning``).
    """

    def __init__(
        self,
        *,
        strict: bool = True,
        secret: bytes = _DEFAULT_SECRET,
        reasoning_text: str | None = None,
        thinking_size: int | None = None,
        stream_chunks: int = 5,
        max_tool_rounds: int = 1,
        redacted: bool = False,
        interleaved: bool = False,
        reasoning_field: str = "reasoning_content",
    ) -> None:
        if reasoning_field not in ("reasoning_content", "reasoning"):
            raise ValueError(f"reasoning_field must be 'reasoning_content' or 'reasoning', not {reasoning_field!r}")
        self.script = Script(
            strict=strict,
            reasoning_text=reasoning_text,
            thinking_size=thinking_size,
            stream_chunks=max(1, stream_chunks),
            max_tool_rounds=max_tool_rounds,
            redacted=redacted,
            interleaved=interleaved,
            reasoning_field=reasoning_field,
        )
        self._signer = Signer(secret)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._failures: list[int] = []
        self._break_after: int | None = None
        self._prompt_cache: set[str] = set()
        """Anthropic prompt-cache breakpoints seen (their prefix is read from the cache next time)."""

    @property
    def strict(self) -> bool:
        return self.script.strict

    @strict.setter
    def strict(self, value: bool) -> None:
        self.script = replace(self.script, strict=value)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    def reset(self) -> None:
        """Forget recorded requests and pending faults."""
        with self._lock:
            self._requests.clear()
            self._failures.clear()
            self._break_after = None

    def fail_next(self, status: int, n: int = 1) -> None:
        """Answer the next ``n`` requests with a vendor-shaped error of HTTP ``status``."""
        with self._lock:
            self._failures.extend([status] * n)

    def break_stream_after(self, events: int) -> None:
        """Cut the next streamed response after ``events`` events (Anthropic: an ``error`` event)."""
        with self._lock:
            self._break_after = events

    def transport(self, http: ModuleType | None = None) -> httpx2.MockTransport:
        """An ``httpx2.MockTransport`` for ``httpx2.Client`` and ``httpx2.AsyncClient`` alike (or, given
        ``http`` = the httpx module, httpx's, for an SDK release that sends with httpx)."""
        from ._transport import mock_transport  # imports httpx2: only where a transport is wanted

        transport: httpx2.MockTransport = mock_transport(self.handle, http)
        return transport

    def handle(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str], content: bytes
    ) -> Reply:
        """Answer one HTTP request (used by the transport and the server)."""
        try:
            body: Any = json.loads(content) if content else None
        except ValueError:
            body = None
        vendor = _vendor(path)
        request = RecordedRequest(
            method.upper(), path, dict(query), {k.lower(): v for k, v in headers.items()}, body, vendor
        )
        with self._lock:
            self._requests.append(request)
            failure = self._failures.pop(0) if self._failures else None
        if failure is not None:
            return _ERRORS[vendor](failure, _failure_message(failure))
        reply = self._route(request)
        if reply.stream:
            with self._lock:
                cut, self._break_after = self._break_after, None
            if cut is not None:
                reply = _cut(reply, cut, vendor)
        return reply

    def _route(self, request: RecordedRequest) -> Reply:
        vendor, script, signer = request.vendor, self.script, self._signer
        if request.method != "POST" or not vendor:
            return _ERRORS[vendor](404, f"Not found: {request.method} {request.path}")
        if vendor == "anthropic":
            if request.path.endswith("/count_tokens"):
                return json_reply({"input_tokens": estimate_tokens(json.dumps(request.body))})
            return _anthropic.handle(request, script, signer, self._prompt_cache)
        if vendor == "gemini":
            match = _gemini.ROUTE.match(request.path)
            assert match is not None
            method = match["method"]
            if method not in ("generateContent", "streamGenerateContent"):
                return _gemini.error_reply(404, f"Method {method} is not simulated.")
            stream = method == "streamGenerateContent"
            return _gemini.handle(request, match["model"], stream, script, signer)
        if vendor == "bedrock":
            route = _bedrock.ROUTE.match(request.path)
            assert route is not None
            stream = route["method"] == "converse-stream"
            return _bedrock.handle(request, route["model"], script, signer, self._prompt_cache, stream=stream)
        if vendor == "openai.chat":
            return _openai_chat.handle(request, script)
        return _openai_responses.handle(request, script, signer)


def _failure_message(status: int) -> str:
    if status == 429:
        return "Rate limit exceeded (simulated)."
    if status in (503, 529):
        return "Overloaded (simulated)."
    return f"Simulated failure with HTTP {status}."


def _cut(reply: Reply, events: int, vendor: str) -> Reply:
    chunks = reply.chunks[: max(0, events)]
    if vendor == "anthropic":
        return replace(reply, chunks=(*chunks, _anthropic.OVERLOADED_EVENT))
    return replace(reply, chunks=chunks, abort=True)
