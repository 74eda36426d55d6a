"""The scrubber has no holes (issue #27 point 4): a synthetic peer puts a text and a signature loom-otel
captured in an earlier trace into every place a span or log record has, in every common encoding, and
none of it is exported; a value cut by an attribute limit is found by its prefix; a reasoning shape cut
short is still read; providers made after ``instrument()`` are reached."""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, Status, StatusCode

from loom_otel.core import ReasoningConfig
from loom_otel.core._scrub import REMOVED, scrub_value
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import Telemetry
from loom_otel.testing.simulator import Simulator

TEXT = (
    'CANARY-77ab: The user "Zoë" wants <Paris> & Lyon weather for tomorrow morning.\n'
    "So I call the weather tool first, then compare both cities' forecasts.\n"
    "Finally I answer with a short table ☂ and nothing else."
)
PHRASES = ("CANARY-77ab: The user", "call the weather tool first", "compare both cities", "answer with a short table")
"""Pieces of ``TEXT`` any leak of it shows (compared on letters and digits only: every encoding)."""
_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")


def _letters(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", text)


def _decodings(text: str) -> Iterator[str]:
    """``text`` and what its base64-looking runs decode to (at every byte alignment)."""
    yield text
    for found in _B64_RUN.findall(text):
        run = found.rstrip("=").replace("-", "+").replace("_", "/")
        for skip in range(4):
            piece = run[skip:]
            piece = piece[: len(piece) // 4 * 4]
            try:
                yield base64.b64decode(piece).decode("utf-8", "ignore")
            except ValueError:
                continue


def _leaks(texts: list[str], secrets: list[str]) -> list[str]:
    """The phrases of ``TEXT`` and the ``secrets`` (a 40-character prefix suffices) any text shows."""
    found = []
    needles = [_letters(p) for p in PHRASES] + [_letters(s[:40]) for s in secrets]
    for text in texts:
        for decoded in _decodings(text):
            letters = _letters(decoded)
            found += [f"{needle[:16]}... in {text[:60]!r}" for needle in needles if needle in letters]
    return found


def _span_texts(span: ReadableSpan) -> Iterator[str]:
    """Every string an exported span carries, one by one, then all of them joined (stream deltas)."""
    pieces = [span.name, span.status.description or "", *(event.name for event in span.events)]
    deltas: list[str] = []
    holders = [span.attributes or {}, *(link.attributes or {} for link in span.links)]
    for attributes in [*holders, *(event.attributes or {} for event in span.events)]:
        for value in attributes.values():
            items = value if isinstance(value, tuple | list) else (value,)
            deltas += [str(item) for item in items]
    yield from pieces
    yield from deltas
    yield "".join(deltas)


def _log_texts(exporter: InMemoryLogRecordExporter) -> list[str]:
    found = []
    for data in exporter.get_finished_logs():
        record = data.log_record
        body = record.body
        found.append(
            body.decode("utf-8", "replace") if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False)
        )
        found += [str(v) for v in (record.attributes or {}).values()]
    return found


def _capture(
    provider: TracerProvider, config: ReasoningConfig, mode: str = "sync"
) -> tuple[AnthropicInstrumentor, str]:
    """One Anthropic call loom-otel captures (its own trace, in call ``mode``); returns the instrumentor
    and the signature."""
    import asyncio

    loom = AnthropicInstrumentor()
    loom.instrument(tracer_provider=provider, config=config, skip_dep_check=True)
    sim = Simulator(reasoning_text=TEXT)
    request: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 2048,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
    }
    if mode == "sync":
        message = sim.anthropic_client().messages.create(**request)
    elif mode == "stream":
        with sim.anthropic_client().messages.stream(**request) as streamed:
            message = streamed.get_final_message()
    else:

        async def create() -> Any:
            return await sim.async_anthropic_client().messages.create(**request)

        message = asyncio.run(create())
    (signature,) = [b.signature for b in message.content if b.type == "thinking"]
    assert [b.thinking for b in message.content if b.type == "thinking"] == [TEXT]
    return loom, signature


def _encodings(signature: str) -> dict[str, str]:
    """The text (and the signature) as a peer might write them."""
    body = json.dumps({"messages": [{"role": "assistant", "content": TEXT}]})
    return {
        "raw": TEXT,
        "json": json.dumps(TEXT),
        "json_unicode": json.dumps(TEXT, ensure_ascii=False),
        "json_twice": json.dumps(json.dumps({"text": TEXT})),
        "html": html.escape(TEXT),
        "html_of_json": html.escape(json.dumps([{"type": "text", "text": TEXT}])),
        "base64": base64.b64encode(TEXT.encode()).decode(),
        "base64_body": base64.b64encode(body.encode()).decode(),
        "repr": repr(TEXT),
        "crlf": TEXT.replace("\n", "\r\n"),
        "cut_json": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": TEXT}]}])[:130],
        "prefix": TEXT[:45],
        "signature_inside": f"replayed block sig={signature}; end",
        "signature_cut": signature[:48],
    }


@pytest.fixture(params=["sync", "stream", "async"])
def peer(config: ReasoningConfig, request: pytest.FixtureRequest) -> Iterator[tuple[Telemetry, str]]:
    """The text and signature captured in one call of each mode, the providers left to the peer."""
    telemetry = Telemetry.in_memory()
    loom, signature = _capture(telemetry.provider, config, request.param)
    try:
        yield telemetry, signature
    finally:
        loom.uninstrument()


@pytest.mark.parametrize("place", ["name", "attribute", "sequence", "event", "event_name", "link", "status"])
def test_a_synthetic_peer_in_a_later_trace_exports_nothing(peer, place):
    """Every encoding in every place of a span of another trace (the peer's tracer, no parent)."""
    telemetry, signature = peer
    tracer = telemetry.provider.get_tracer("synthetic.peer")
    for kind, value in _encodings(signature).items():
        span = tracer.start_span(value if place == "name" else f"peer {kind}", links=_links(tracer, place, value))
        if place == "attribute":
            span.set_attribute("peer.value", value)
        elif place == "sequence":
            span.set_attribute("peer.values", ["before", value])
        elif place == "event":
            span.add_event("peer.event", {"peer.value": value})
        elif place == "event_name":
            span.add_event(value)
        elif place == "status":
            span.set_status(Status(StatusCode.ERROR, f"400 from the proxy: {value}"))
        span.end()
    theirs = [s for s in telemetry.spans if s.instrumentation_scope.name == "synthetic.peer" and s.name != "linked"]
    assert len(theirs) == len(_encodings(signature))
    assert all(s.context.trace_id != theirs[0].context.trace_id for s in telemetry.spans if s not in theirs)
    assert _leaks([t for s in theirs for t in _span_texts(s)], [TEXT, signature]) == []


def _links(tracer: Any, place: str, value: str) -> list[Link]:
    if place != "link":
        return []
    with tracer.start_as_current_span("linked") as linked:
        return [Link(linked.get_span_context(), {"peer.value": value})]


def test_exception_events_and_stream_deltas(peer):
    """A proxy's 400 quoting the request as an exception event, and the text as stream deltas of eight
    characters, one event each (no single event holds a recognisable piece)."""
    telemetry, signature = peer
    tracer = telemetry.provider.get_tracer("synthetic.peer")
    with tracer.start_as_current_span("peer call") as span:
        request = json.dumps({"messages": [{"role": "assistant", "content": [{"type": "text", "text": TEXT}]}]})
        span.record_exception(ValueError(f"Error code: 400 - invalid request: {request} signature={signature}"))
        for start in range(0, len(TEXT), 8):
            span.add_event("gen_ai.content.delta", {"gen_ai.delta": TEXT[start : start + 8]})
    (theirs,) = [s for s in telemetry.spans if s.name == "peer call"]
    assert any(e.name == "exception" for e in theirs.events)
    assert _leaks(list(_span_texts(theirs)), [TEXT, signature]) == []


def test_log_records_of_a_logger_provider_made_after_instrument(peer):
    """A ``LoggerProvider`` created after ``instrument()`` (never given to loom-otel): str, bytes and map
    bodies in every encoding."""
    _, signature = peer
    exporter = InMemoryLogRecordExporter()
    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = logs.get_logger("synthetic.peer")
    for value in _encodings(signature).values():
        logger.emit(LogRecord(body=value))
        logger.emit(LogRecord(body=value.encode()))
        logger.emit(LogRecord(body={"message": {"content": [value]}}, attributes={"peer.value": value}))
    assert len(exporter.get_finished_logs()) == 3 * len(_encodings(signature))
    assert _leaks(_log_texts(exporter), [TEXT, signature]) == []
    logs.shutdown()


def test_a_peer_on_another_tracer_provider(peer):
    """A tracer provider loom-otel was never given, made after ``instrument()``, its exporter first."""
    _, signature = peer
    exporter = InMemorySpanExporter()
    other = TracerProvider()
    other.add_span_processor(SimpleSpanProcessor(exporter))
    with other.get_tracer("synthetic.peer").start_as_current_span("peer call") as span:
        span.set_attribute("input.value", json.dumps({"messages": [{"role": "user", "content": TEXT}]}))
        span.set_attribute("gen_ai.signature.seen", signature)
    (exported,) = exporter.get_finished_spans()
    assert _leaks(list(_span_texts(exported)), [TEXT, signature]) == []


def test_a_value_cut_by_the_attribute_limit(config, monkeypatch):
    """``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`` cuts a peer's JSON in the middle of the text: its prefix goes."""
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "150")
    telemetry = Telemetry.in_memory()
    loom, signature = _capture(telemetry.provider, config)
    try:
        with telemetry.provider.get_tracer("synthetic.peer").start_as_current_span("next turn") as span:
            span.set_attribute("output.value", json.dumps({"content": [{"type": "text", "text": TEXT}]}))
            span.set_attribute("peer.signature", json.dumps({"sig": signature}))
    finally:
        loom.uninstrument()
    (theirs,) = [s for s in telemetry.spans if s.name == "next turn"]
    cut = theirs.attributes["output.value"]
    assert cut.startswith('{"content": [{"type": "text", "text": "[loom-otel reasoning text ref=')
    assert _leaks(list(_span_texts(theirs)), [TEXT, signature]) == []


def test_a_reasoning_shape_cut_short_is_still_read():
    """Nothing captured (another process): a conventions' reasoning part cut by a length limit, its
    text and a signature removed; the parts before it stay readable."""
    secret = "a thought loom-otel never saw, long enough to matter to anyone reading it"
    whole = json.dumps(
        [
            {"role": "user", "parts": [{"type": "text", "content": "Weather?"}]},
            {"role": "assistant", "parts": [{"type": "reasoning", "content": secret, "signature": "c2lnbmF0dXJl"}]},
        ]
    )
    for cut in (whole.index(secret) + 30, whole.index("c2lnbmF0dXJl") + 6, len(whole) - 3):
        scrubbed = scrub_value(whole[:cut])
        assert secret[:20] not in scrubbed and "c2lnbm" not in scrubbed
        assert "Weather?" in scrubbed and REMOVED in scrubbed


class _VendorLoggerProvider:
    """A logger provider that is not the SDK's and takes no processor (a vendor's own)."""

    def get_logger(self, name: str, *args: Any, **kwargs: Any) -> Any:
        from opentelemetry._logs import NoOpLogger

        return NoOpLogger(name)


def test_a_provider_out_of_reach_is_named_once_at_instrument(config):
    import warnings

    from loom_otel.core import LoomOtelWarning
    from loom_otel.core._runtime._warnings import forget_once

    forget_once()
    telemetry = Telemetry.in_memory()
    for attempt in range(2):
        loom = AnthropicInstrumentor()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loom.instrument(
                tracer_provider=telemetry.provider,
                logger_provider=_VendorLoggerProvider(),
                config=config,
                skip_dep_check=True,
            )
        loom.uninstrument()
        named = [w for w in caught if issubclass(w.category, LoomOtelWarning) and "cannot scrub" in str(w.message)]
        assert len(named) == (1 if attempt == 0 else 0)
        if attempt == 0:
            assert "_VendorLoggerProvider" in str(named[0].message) and "tracer provider" not in str(named[0].message)


def test_any_run_long_enough_is_found_wherever_it_sits():
    """Every piece of ``MIN_RUN`` letters and digits of a remembered text, at every offset in the text
    and in the value around it, is replaced; a shorter one is left (it is not unambiguous)."""
    import random

    from loom_otel.core._scrub._registry import registry
    from loom_otel.core._scrub._windows import MIN_RUN

    rng = random.Random(27)
    secret = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(160))
    registry.add_text(secret, "[gone]", (None, None, 160), 0)
    for start in range(40):
        for pad in range(0, 20, 3):
            for length in (MIN_RUN, MIN_RUN + 7):
                piece = secret[start : start + length]
                scrubbed = scrub_value(f"{'x' * pad} ({piece}) trailing words")
                assert piece not in scrubbed and "[gone]" in scrubbed, (start, pad, length)
            short = secret[start : start + MIN_RUN - 6]
            assert short in scrub_value(f"{'x' * pad} ({short}) trailing words")


def test_stream_deltas_over_the_log_records_of_one_span(peer):
    """The text as deltas of 8 to 24 characters, one log record each, all of one span: each record is
    read after what the span's earlier records carried, so no run of ``MIN_RUN`` (30) letters and digits
    of the text is exported, even joined; only the first records, fewer letters than that, go out as
    they were."""
    telemetry, _ = peer
    exporter = InMemoryLogRecordExporter()
    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = logs.get_logger("synthetic.peer")
    tracer = telemetry.provider.get_tracer("synthetic.peer")
    sizes, start, deltas = (8, 13, 24, 17, 11), 0, []
    while start < len(TEXT):
        deltas.append(TEXT[start : start + sizes[len(deltas) % len(sizes)]])
        start += len(deltas[-1])
    with tracer.start_as_current_span("peer stream") as span:
        ids = span.get_span_context()
        for delta in deltas:
            logger.emit(LogRecord(body=delta, trace_id=ids.trace_id, span_id=ids.span_id, trace_flags=ids.trace_flags))
    bodies = [str(data.log_record.body) for data in exporter.get_finished_logs()]
    assert len(bodies) == len(deltas)
    assert all(len(_letters(delta)) < 30 for delta in deltas)  # no single record holds a run
    exported, secret = _letters("".join(bodies)), _letters(TEXT)
    assert not [secret[i : i + 30] for i in range(len(secret) - 29) if secret[i : i + 30] in exported]
    assert bodies[0] == deltas[0] and "[loom-otel reasoning text ref=" in bodies[-1]
    logs.shutdown()
