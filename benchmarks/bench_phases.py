"""Where an instrumented call spends its added time, timed part by part on the calling thread: the SDK's
own work inside each instrumentation against the bare call, and loom-otel's parts around it.

    python benchmarks/bench_phases.py [--call anthropic-create|anthropic-stream|gemini-generate|gemini-stream]
                                      [--calls 1000] [--rounds 3] [--clock wall|cpu] [--transport memory|socket]
                                      [--peers] [--root DIR]

The SDK's own work is timed from inside, below every wrapper (a timer is put in its place before
anything is instrumented): Anthropic's ``Messages.create`` (and, streamed, each step of its SSE event
generator), Gemini's ``Models.generate_content`` (or each step of the generator
``generate_content_stream`` returns). loom-otel's per-request hooks of a Gemini call run inside the SDK's
method (automatic function calling sends from there): their time is taken out of the SDK's. So each
variant's row splits its call into the SDK's own work and what the instrumentation adds around it. The
SDK does the same work in every variant (same arguments, same replies), so where it runs slower beside an
instrumentation, that is the instrumentation's code and data taking the processor's caches between the
SDK's turns: a cost no part of the instrumentation shows when timed alone, and that an instruction count
(``bench_instructions.py``) does not see.

loom-otel's parts are timed the same way (a timer around each of a few internal functions, summed per
call; indented ones are inside the one above them): the request guard, the call's preparation (the
continuation pass; Gemini's runs per request, inside the SDK), the request attributes, the span's start,
the response's reading, sealing, the store's ``put``, the journal record, the binding record, the
scrubber's memory, the span's end. A timer costs about 0.3 us (``--clock cpu``: about 1 us), so a part's
figure includes that much, and a part called per chunk that much per chunk.

Variants: ``bare``, the official instrumentation (no content), with ``--peers`` OpenLLMetry and
OpenInference, on Anthropic ``create`` the floor (``bench_floor.py``), loom-otel's default (a new
conversation per call) and loom-otel in one ``execution()`` (one conversation). Calls as in
``bench_peers.py``: 8 KiB of new reasoning per reply, the in-process transport (``--transport socket``: the
replay server in its own process). ``--clock cpu`` times
with the calling thread's CPU clock, which a busy machine does not inflate as much as the wall clock.
Use it to see where the time goes, and ``bench_peers.py`` for the ratios the targets are about.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import anthropic._streaming as anthropic_streaming
import anthropic.resources.messages.messages as messages_module
import bench_peers
import google.genai.models as genai_models
from _overhead import Variant, provider, remove, replayed, store_root
from bench_floor import floor_variant

from loom_otel.core import FileReasoningStore, LoomOtelWarning, execution, force_flush
from loom_otel.core._calls import _model_call, _skeleton
from loom_otel.core._calls._handler import ReasoningHandler
from loom_otel.core._calls._model_call import ModelCall
from loom_otel.core._calls._results import ResultReaders
from loom_otel.core._evidence._journal._writer import Journal
from loom_otel.core._evidence._store._protocol import Envelope
from loom_otel.instrumentation.anthropic._adapter import AnthropicAdapter
from loom_otel.instrumentation.anthropic._continuation import AnthropicContinuation
from loom_otel.instrumentation.anthropic._extractors import MessageStreamAccumulator
from loom_otel.instrumentation.google_genai._adapter import CallHops, GeminiAdapter
from loom_otel.instrumentation.google_genai._continuation import GeminiContinuation
from loom_otel.instrumentation.google_genai._extractors import ResponseAccumulator

SDK = "the SDK's own call"
CALL = "call"

Part = tuple[str, Any, str, bool]
"""(label, owner, attribute, inside the SDK's call): a part timed by a wrapper around it."""

_CAPTURE: tuple[Part, ...] = (
    ("  seal (SHA-256 of the text)", Envelope, "seal", False),
    ("  store put", FileReasoningStore, "put", False),
    ("  journal record", Journal, "append", False),
    ("  scrubber's memory", _model_call, "remember", False),
    ("  span end", ModelCall, "_end", False),
)
_START: tuple[Part, ...] = (("span start", ReasoningHandler, "call", False),)

ANTHROPIC: tuple[Part, ...] = (
    ("request guard", AnthropicAdapter, "check_request", False),
    ("continuation pass", AnthropicAdapter, "prepare", False),
    ("request attributes", AnthropicAdapter, "request_info", False),
    *_START,
)
_ANTHROPIC_END: tuple[Part, ...] = (*_CAPTURE, ("  binding record", AnthropicContinuation, "record_leading", False))
ANTHROPIC_CREATE: tuple[Part, ...] = (
    *ANTHROPIC,
    ("response, capture and end (all)", ResultReaders, "_finish", False),
    *_ANTHROPIC_END,
)
ANTHROPIC_STREAM: tuple[Part, ...] = (
    *ANTHROPIC,
    ("events read (per event, summed)", MessageStreamAccumulator, "feed", False),
    ("capture and end (all)", _skeleton, "_complete", False),
    *_ANTHROPIC_END,
)
GEMINI: tuple[Part, ...] = (
    ("request guard", GeminiAdapter, "check_request", False),
    ("call state", GeminiAdapter, "prepare", False),
    ("request attributes", GeminiAdapter, "request_info", False),
    *_START,
    ("continuation session", CallHops, "attach", False),
    ("continuation pass (per request, inside the SDK)", CallHops, "request", True),
)
_GEMINI_END: tuple[Part, ...] = (
    ("  reasoning, usage and layout", ResponseAccumulator, "result", False),
    *_CAPTURE,
    ("  binding record", GeminiContinuation, "record", False),
)
GEMINI_GENERATE: tuple[Part, ...] = (
    *GEMINI,
    ("response read (per request, inside the SDK)", CallHops, "response", True),
    ("capture and end (all)", ResultReaders, "_finish", False),
    *_GEMINI_END,
)
GEMINI_STREAM: tuple[Part, ...] = (
    *GEMINI,
    ("chunks read (per chunk, summed)", ResponseAccumulator, "feed", False),
    ("capture and end (all)", _skeleton, "_complete", False),
    *_GEMINI_END,
)


class Clock:
    """Sums each label's time over one call; ``end_call`` files the sums (a part the call did not run
    counts 0)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.now = clock
        self._current: defaultdict[str, float] = defaultdict(float)
        self.calls: defaultdict[str, list[float]] = defaultdict(list)

    def add(self, label: str, seconds: float) -> None:
        self._current[label] += seconds

    def end_call(self, labels: list[str]) -> None:
        for label in labels:
            self.calls[label].append(self._current.pop(label, 0.0))
        self._current.clear()

    def clear(self) -> None:
        self._current.clear()
        self.calls.clear()


def _timed(clock: Clock, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    now = clock.now

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = now()
        try:
            return function(*args, **kwargs)
        finally:
            clock.add(label, now() - started)

    return timed


def _timed_steps(clock: Clock, label: str, iterator: Iterator[Any]) -> Iterator[Any]:
    """Each step of ``iterator`` timed (a generator's work happens in its steps)."""
    now = clock.now
    step = iterator.__next__
    while True:
        started = now()
        try:
            item = step()
        except StopIteration:
            return
        finally:
            clock.add(label, now() - started)
        yield item


def _timed_generator(clock: Clock, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        return _timed_steps(clock, label, function(*args, **kwargs))

    return timed


@dataclass(frozen=True)
class Workload:
    name: str
    parts: tuple[Part, ...]
    call: Callable[[Any, Any], Callable[[], Any]]
    """(anthropic client, gemini client) -> the call."""
    sdk: Callable[[Clock], ExitStack]
    """Puts the SDK's own timers in place (before anything is instrumented)."""
    floor: bool = False


def _anthropic_sdk(streamed: bool) -> Callable[[Clock], ExitStack]:
    def install(clock: Clock) -> ExitStack:
        stack = ExitStack()
        create = messages_module.Messages.create
        stack.enter_context(mock.patch.object(messages_module.Messages, "create", _timed(clock, SDK, create)))
        if streamed:
            events = anthropic_streaming.Stream.__stream__
            timed = _timed_generator(clock, SDK, events)
            stack.enter_context(mock.patch.object(anthropic_streaming.Stream, "__stream__", timed))
        return stack

    return install


def _gemini_sdk(streamed: bool) -> Callable[[Clock], ExitStack]:
    def install(clock: Clock) -> ExitStack:
        stack = ExitStack()
        if streamed:
            method = genai_models.Models.generate_content_stream
            timed = _timed_generator(clock, SDK, method)
            stack.enter_context(mock.patch.object(genai_models.Models, "generate_content_stream", timed))
        else:
            method = genai_models.Models.generate_content
            stack.enter_context(mock.patch.object(genai_models.Models, "generate_content", _timed(clock, SDK, method)))
        return stack

    return install


def _named(name: str) -> Callable[[Any, Any], Callable[[], Any]]:
    def call(claude: Any, gemini: Any) -> Callable[[], Any]:
        found = dict(bench_peers.workloads_of(claude, gemini))
        return found[name]

    return call


WORKLOADS = {
    w.name: w
    for w in (
        Workload("anthropic-create", ANTHROPIC_CREATE, _named("anthropic-create"), _anthropic_sdk(False), floor=True),
        Workload("anthropic-stream", ANTHROPIC_STREAM, _named("anthropic-stream"), _anthropic_sdk(True)),
        Workload("gemini-generate", GEMINI_GENERATE, _named("gemini-generate"), _gemini_sdk(False)),
        Workload("gemini-stream", GEMINI_STREAM, _named("gemini-stream"), _gemini_sdk(True)),
    )
}


@contextmanager
def _parts_timed(clock: Clock, parts: tuple[Part, ...]) -> Iterator[None]:
    with ExitStack() as stack:
        for label, owner, name, _ in parts:
            original = getattr(owner, name)  # a function, or a class method bound to its class
            stack.enter_context(mock.patch.object(owner, name, _timed(clock, label, original)))
        yield


def _variants(workload: Workload, root: Path, peers: bool) -> list[Variant]:
    found, _ = bench_peers.variants(root, 0)
    chosen = [v for v in found if v.name.startswith("official OTel")]
    if peers:
        chosen += [v for v in found if v.name.startswith(("OpenLLMetry", "OpenInference"))]
    if workload.floor:
        chosen.append(floor_variant(root))
    return [*chosen, *(v for v in found if v.name.startswith("loom-otel"))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--call", choices=sorted(WORKLOADS), default="anthropic-create")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--transport", choices=("memory", "socket"), default="memory")
    parser.add_argument("--peers", action="store_true", help="OpenLLMetry and OpenInference too")
    parser.add_argument("--root", type=Path, default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore", LoomOtelWarning)  # the unsigned-checkpoint warning
    workload = WORKLOADS[args.call]
    root = store_root(args)
    clock = Clock(time.perf_counter if args.clock == "wall" else time.thread_time)
    try:
        with workload.sdk(clock), replayed(args) as (url, transport):
            claude, gemini = bench_peers.clients(url, transport)
            call = workload.call(claude, gemini)
            rows = _measure(call, workload, _variants(workload, root, args.peers), clock, args)
    finally:
        remove(root)
    _report(workload, rows, args)


def _measure(
    call: Callable[[], Any], workload: Workload, variants: list[Variant], clock: Clock, args: argparse.Namespace
) -> dict[str, dict[str, list[float]]]:
    """Per variant (and ``bare``): each round's median per call of the whole call, of the SDK's own work
    and of each loom-otel part."""
    rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    providers = {variant.name: provider() for variant in variants}
    labels = [CALL, SDK, *(label for label, _, _, _ in workload.parts)]
    for _ in range(50):
        call()
    for round_ in range(args.rounds):
        shift = round_ % len(variants)
        for variant in [None, *variants[shift:], *variants[:shift]]:
            name = "bare" if variant is None else variant.name
            undo = (lambda: None) if variant is None else variant.instrument(providers[name])
            one = variant is not None and variant.one_execution
            try:
                timed = _parts_timed(clock, workload.parts) if variant is not None and variant.loom else nullcontext()
                with timed, execution(f"phases-{round_}") if one else nullcontext():
                    for _ in range(20):
                        call()
                    clock.clear()
                    now = clock.now
                    for _ in range(args.calls):
                        started = now()
                        call()
                        clock.add(CALL, now() - started)
                        clock.end_call(labels)
            finally:
                undo()
            force_flush()
            inside = [label for label, _, _, within in workload.parts if within]
            sdk_own = [sdk - sum(clock.calls[label][n] for label in inside) for n, sdk in enumerate(clock.calls[SDK])]
            for label in labels:
                values = sdk_own if label == SDK else clock.calls[label]
                if values and (label in (CALL, SDK) or any(values)):
                    rows[name][label].append(statistics.median(values))
    for each in providers.values():
        each.shutdown()
    return rows


def _report(workload: Workload, rows: dict[str, dict[str, list[float]]], args: argparse.Namespace) -> None:
    med = statistics.median
    print(
        f"{workload.name}, 8 KiB new reasoning per call, {args.transport} transport; medians of {args.rounds} rounds x "
        f"{args.calls} calls (us per call, calling thread, {args.clock} clock)"
    )
    bare_call, bare_sdk = med(rows["bare"][CALL]), med(rows["bare"][SDK])
    print(f"{'variant':44} {'call':>7} {'+us':>6} {'SDK inside':>11} {'SDK slower':>11} {'around SDK':>11}")
    for name, times in rows.items():
        call, sdk = med(times[CALL]), med(times[SDK])
        print(
            f"{name:44} {call * 1e6:7.0f} {(call - bare_call) * 1e6:6.0f} {sdk * 1e6:11.0f}"
            f" {(sdk - bare_sdk) * 1e6:11.0f} {(call - sdk) * 1e6:11.0f}"
        )
    for name, times in rows.items():
        if not any(label in times for label, _, _, _ in workload.parts):
            continue
        print(f"\n{name}, by part (us per call; indented parts are inside the one above them)")
        for label, _, _, _ in workload.parts:
            if label in times:
                print(f"  {label:50} {med(times[label]) * 1e6:7.1f}")


if __name__ == "__main__":
    main()
