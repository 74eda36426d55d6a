"""No SDK object the application receives carries text it did not send (DESIGN "Execution identity"), in
any mode: these take the texts loom-otel put back into a request out of an SDK exception (its message,
body (google-genai's ``details``), ``args``, and the request and response it holds, whose bodies may
quote the request) and out of the HTTP request a returned object holds (``with_raw_response``'s
``http_request``, a stream's ``response.request``); in redact mode, the response's reasoning out of a
raw HTTP response body (or the text of one an SDK hands over). Every text is replaced where it stands,
raw and JSON-escaped, by ``REMOVED``; nothing here raises (an object it cannot change is left as it is).

What loom-otel cannot reach: the SDK's own debug log lines (a warning says so once, at ``instrument()``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any, Final

from loom_otel.core._evidence._canonical import text_bytes
from loom_otel.core._runtime._callbacks import logger
from loom_otel.core._runtime._warnings import warn

__all__ = [
    "REMOVED",
    "WITHHELD",
    "warn_if_sdk_debug_logs",
    "withhold_from_exception",
    "withhold_from_request",
    "withhold_from_response",
    "withhold_from_text",
]

REMOVED: Final = "[reasoning removed by loom-otel]"
WITHHELD: Final = "[reasoning withheld by loom-otel]"
"""What redact mode hands the application in place of a thinking text it withholds. Not empty: frameworks
drop an empty thinking block (LlamaIndex 0.14 does), and the next request of a tool loop is then rejected.
It names no reasoning and no reference (a stream hands it on before the text is complete and stored). On
the way out it is replaced like any text the block's binding record does not match, only in a block that
binds; elsewhere (a text block, a user message) it goes out as the application sent it."""
_SDK_LOGGERS: Final = ("anthropic", "openai", "google_genai", "botocore", "httpx", "httpx2", "httpcore")


def _needles(texts: Iterable[str]) -> list[tuple[str, bytes]]:
    """Each text as it may stand in a string and in bytes: raw, and JSON-escaped (both ASCII forms). A
    text of white space only is no needle (it would take every space out of the message)."""
    found: dict[str, None] = {}
    for text in texts:
        if text and not text.isspace():
            for form in (text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]):
                found.setdefault(form)
    return sorted(((n, text_bytes(n)) for n in found), key=lambda n: -len(n[0]))


def _clean(value: Any, needles: list[tuple[str, bytes]]) -> Any:
    if isinstance(value, str):
        for text, _ in needles:
            value = value.replace(text, REMOVED)
        return value
    if isinstance(value, bytes):
        for _, raw in needles:
            value = value.replace(raw, REMOVED.encode())
        return value
    if isinstance(value, dict):
        return {k: _clean(v, needles) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_clean(v, needles) for v in value)
    return value


def _clean_message(message: Any, needles: list[tuple[str, bytes]]) -> None:
    """An httpx(2) request or response: its body as bytes (and the stream built from it)."""
    content = getattr(message, "_content", None)
    if not isinstance(content, bytes):
        return
    cleaned = _clean(content, needles)
    if cleaned == content:
        return
    message._content = cleaned
    text = getattr(message, "_text", None)  # a response caches its decoded text
    if isinstance(text, str):
        message._text = _clean(text, needles)
    stream = getattr(message, "stream", None)
    if stream is not None and type(stream).__name__ == "ByteStream":
        message.stream = type(stream)(cleaned)


def withhold_from_exception(exc: BaseException, texts: Iterable[str]) -> None:
    """Take ``texts`` (what loom-otel put back into the request) out of ``exc``, which is re-raised as it is."""
    needles = _needles(texts)
    if not needles:
        return
    try:
        exc.args = _clean(exc.args, needles)
        for name in ("message", "body", "api_message", "details"):  # google-genai keeps the body as details
            value = getattr(exc, name, None)
            if value is not None:
                setattr(exc, name, _clean(value, needles))
        for name in ("request", "response"):
            _clean_message(getattr(exc, name, None), needles)
        _clean_message(getattr(getattr(exc, "response", None), "request", None), needles)
    except Exception as error:  # an exception type that refuses a change keeps it
        logger.warning("loom-otel: could not withhold reasoning from %s (%s)", type(exc).__name__, type(error).__name__)


def withhold_from_request(result: Any, texts: Iterable[str]) -> None:
    """Take ``texts`` (what loom-otel put back into the request) out of the HTTP request that an object
    the SDK returned holds: a raw response (``http_response.request``, its ``http_request``) or a stream
    (``response.request``)."""
    needles = _needles(texts)
    if not needles:
        return
    try:
        for name in ("http_response", "response"):
            response = getattr(result, name, None)
            request = getattr(response, "request", None) if response is not None else None
            if request is not None:
                _clean_message(request, needles)
    except Exception as error:
        logger.warning("loom-otel: could not withhold reasoning from a raw request (%s)", type(error).__name__)


def withhold_from_response(response: Any, texts: Iterable[str]) -> None:
    """Take ``texts`` (the response's reasoning) out of a raw HTTP response's body (redact mode)."""
    needles = _needles(texts)
    if needles:
        try:
            _clean_message(response, needles)
        except Exception as error:
            logger.warning("loom-otel: could not withhold reasoning from a raw response (%s)", type(error).__name__)


def withhold_from_text(body: str, texts: Iterable[str]) -> str:
    """``body`` (a raw response body an SDK hands over as text: google-genai's ``sdk_http_response.body``)
    without ``texts`` (redact mode)."""
    cleaned: str = _clean(body, _needles(texts))
    return cleaned


def warn_if_sdk_debug_logs(setting: str) -> None:
    """Text the application does not hold is put back into requests (``setting``: redact mode, or
    readable reasoning by request): the SDKs log request bodies at DEBUG, which loom-otel cannot
    reach; say so once."""
    noisy = [name for name in _SDK_LOGGERS if logging.getLogger(name).isEnabledFor(logging.DEBUG)]
    if noisy:
        warn(
            f"{setting}, but the {', '.join(noisy)} logger(s) log at DEBUG: the SDKs "
            "write request bodies there, readable reasoning put back into a request included",
            once=("sdk-debug-logs", tuple(noisy)),
        )
