"""The floor: what loom-otel's essential per-call work costs when done minimally, beside loom-otel and the
official instrumentation, in one run (Anthropic ``create``, a new conversation per call).

    python benchmarks/bench_floor.py [--calls 200] [--rounds 5] [--transport memory|socket]

``floor`` is not loom-otel: a wrapper of ``Messages.create`` written for this measurement that does only
what every capture must do, as directly as Python allows: a span with the request's GenAI attributes;
the thinking text's SHA-256; one ``writev`` of the text to one of 64 open pack files; a chained journal
line (canonical JSON, its SHA-256 over the previous one) written with one ``os.write``; the
``loom.reasoning.captured`` event added as built; a binding entry keyed by the signature's SHA-256; the
response attributes; a ``syncfs`` every 20 ms on a background thread. It has no request guard, no
continuation pass, no execution identity, no metrics, no scrubbing, no failure handling, and it makes
its span current for nobody. Its amortized figure leaves out its last ``syncfs``.

What loom-otel adds above the floor is what those missing parts cost (README, Benchmarks).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import anthropic
import wrapt
from _overhead import Variant, arguments, loom_variants, official_variant, remove, replayed, run, store_root
from bench_anthropic import REQUEST, client_of, official
from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.sdk.trace import Event, TracerProvider
from opentelemetry.trace import SpanKind

from loom_otel.instrumentation.anthropic import AnthropicInstrumentor

_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


@contextlib.contextmanager
def _floor_files(root: Path) -> Iterator[tuple[list[int], int, Callable[[], None]]]:
    """64 open packs, a journal and the wake-up of a thread that ``syncfs``es 20 ms after a write."""
    directory = tempfile.mkdtemp(prefix="floor-", dir=root)
    packs = [os.open(f"{directory}/{n:02x}", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) for n in range(64)]
    journal = os.open(f"{directory}/journal", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    dirty, stop = threading.Event(), threading.Event()

    def commit() -> None:
        fd = os.open(directory, os.O_RDONLY)
        try:
            while not stop.is_set():
                dirty.wait()
                time.sleep(0.02)
                dirty.clear()
                syncfs(fd)
        finally:
            os.close(fd)

    thread = threading.Thread(target=commit, daemon=True)
    thread.start()
    try:
        yield packs, journal, dirty.set
    finally:
        stop.set()
        dirty.set()
        thread.join()
        for fd in (*packs, journal):
            os.close(fd)


@dataclass
class _Chain:
    """The floor's journal chain: the last record's number and hash."""

    seq: int = 0
    head: str = "0" * 64


def floor_variant(root: Path) -> Variant:
    def instrument(provider: TracerProvider) -> Callable[[], None]:
        tracer = provider.get_tracer("floor")
        opened = contextlib.ExitStack()
        packs, journal, wake = opened.enter_context(_floor_files(root))
        chain = _Chain()
        bindings: dict[bytes, tuple[str, str, str]] = {}

        def create(wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
            span = tracer.start_span(
                f"chat {kwargs['model']}",
                kind=SpanKind.CLIENT,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "anthropic",
                    "gen_ai.request.model": kwargs["model"],
                    "gen_ai.request.max_tokens": kwargs["max_tokens"],
                    "server.address": "api.anthropic.bench",
                    "server.port": 443,
                },
            )
            message = wrapped(*args, **kwargs)
            context = span.get_span_context()
            trace_id, span_id = f"{context.trace_id:032x}", f"{context.span_id:016x}"
            for block in message.content:
                if block.type != "thinking":
                    continue
                body = block.thinking.encode()
                digest = hashlib.sha256(body).hexdigest()
                ref = f"{trace_id}/{digest}"
                os.writev(packs[int(trace_id[:2], 16) >> 2], [ref.encode(), body])
                attributes = {
                    "loom.execution.id": trace_id,
                    "loom.step.id": span_id,
                    "loom.attempt": 1,
                    "gen_ai.provider.name": "anthropic",
                    "gen_ai.request.model": kwargs["model"],
                    "gen_ai.response.model": message.model,
                    "loom.reasoning.part.kind": ("text",),
                    "loom.reasoning.part.ref": (ref,),
                    "loom.reasoning.part.digest": (digest,),
                    "loom.reasoning.part.size": (len(body),),
                    "loom.call.trace_id": trace_id,
                    "loom.call.span_id": span_id,
                }
                chain.seq += 1
                line = _ENCODE({"attributes": attributes, "prev": chain.head, "seq": chain.seq}).encode()
                chain.head = head = hashlib.sha256(bytes.fromhex(chain.head) + line).hexdigest()
                os.write(journal, line + b"\n")
                wake()
                event = {**attributes, "loom.audit.seq": chain.seq, "loom.audit.hash": head}
                span._add_event(Event("loom.reasoning.captured", MappingProxyType(event)))
                bindings[hashlib.sha256(block.signature.encode()).digest()] = (trace_id, ref, digest)
            span.set_attributes(
                {
                    "gen_ai.response.id": message.id,
                    "gen_ai.response.finish_reasons": (str(message.stop_reason),),
                    "gen_ai.usage.input_tokens": message.usage.input_tokens,
                    "gen_ai.usage.output_tokens": message.usage.output_tokens,
                    "gen_ai.response.model": message.model,
                }
            )
            span.end()
            return message

        wrapt.wrap_function_wrapper("anthropic.resources.messages.messages", "Messages.create", create)

        def undo() -> None:
            from anthropic.resources.messages import messages

            unwrap(messages.Messages, "create")
            opened.close()

        return undo

    return Variant("floor: same work, minimal (not loom-otel)", instrument, loom=False)


def main() -> None:
    args = arguments()
    with replayed(args) as (url, transport):
        client = client_of(url, transport)
        root = store_root(args)
        try:
            run(
                f"anthropic {anthropic.__version__}, 8 KiB thinking, stores under {root}",
                [("create", lambda: client.messages.create(**REQUEST))],
                [
                    floor_variant(root),
                    *loom_variants(AnthropicInstrumentor, root)[:1],
                    *official_variant(official(), "official OTel (no content)"),
                ],
                args,
            )
        finally:
            remove(root)


if __name__ == "__main__":
    main()
