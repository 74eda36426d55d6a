"""Where an instrumented Anthropic ``create`` spends its added time, timed phase by phase on the calling
thread: the SDK's own call inside each instrumentation against the bare call, and loom-otel's parts.

    python benchmarks/bench_phases.py [--calls 1000] [--rounds 3] [--root DIR]

The SDK's ``Messages.create`` is timed from inside, below every wrapper (a timer is put in its place
before anything is instrumented), so each variant's row splits its call into the SDK's own work and what
the instrumentation adds around it. The SDK does the same work in every variant (same arguments, same
replies), so where it runs slower beside an instrumentation, that is the instrumentation's code and data
taking the processor's caches between the SDK's turns: a cost no part of the instrumentation shows when
timed alone, and that an instruction count (``bench_instructions.py``) does not see.

loom-otel's parts are timed the same way (a timer around each of a few internal functions; nested ones
are inside their parents): the request guard, the continuation pass, the request attributes, the span's
start, sealing, the store's ``put``, the journal record, the binding record, the span's end. A timer
costs about 0.3 us, so a part's figure includes that much. Calls as in ``bench_anthropic.py``: 8 KiB of
new thinking per reply, the in-process transport, a new conversation per call, loom-otel's defaults.
Use it to see where the time goes, and ``bench_anthropic.py`` for the ratios the targets are about.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

import anthropic.resources.messages.messages as messages_module
from _overhead import Variant, loom_variants, official_variant, provider, remove, replayed, store_root
from bench_anthropic import REQUEST, client_of, official
from bench_floor import floor_variant

from loom_otel.core import FileReasoningStore, LoomOtelWarning, force_flush
from loom_otel.core._calls._handler import ReasoningHandler
from loom_otel.core._calls._model_call import ModelCall
from loom_otel.core._journal._writer import Journal
from loom_otel.core._store._protocol import Envelope
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.anthropic import _adapter as anthropic_adapter
from loom_otel.instrumentation.anthropic._adapter import AnthropicAdapter
from loom_otel.instrumentation.anthropic._continuation import AnthropicContinuation

SDK = "the SDK's own call"

PARTS: tuple[tuple[str, Any, str], ...] = (
    ("request guard", AnthropicAdapter, "check_request"),
    ("continuation pass", AnthropicAdapter, "prepare"),
    ("request attributes", AnthropicAdapter, "request_info"),
    ("span start", ReasoningHandler, "call"),
    ("response, capture and end (all)", anthropic_adapter, "_finish"),
    ("  seal (SHA-256 of the text)", Envelope, "seal"),
    ("  store put", FileReasoningStore, "put"),
    ("  journal record", Journal, "append"),
    ("  binding record", AnthropicContinuation, "record"),
    ("  span end", ModelCall, "_end"),
)
"""loom-otel's parts: (label, owner, attribute), each timed by a wrapper around it (a module's function
where it is looked up at call time)."""

Times = defaultdict[str, list[float]]


def _timed(times: Times, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    clock = time.perf_counter

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = clock()
        try:
            return function(*args, **kwargs)
        finally:
            times[label].append(clock() - started)

    return timed


@contextmanager
def _parts_timed(times: Times) -> Iterator[None]:
    with ExitStack() as stack:
        for label, owner, name in PARTS:
            original = getattr(owner, name)  # a function, or a class method bound to its class
            stack.enter_context(mock.patch.object(owner, name, _timed(times, label, original)))
        yield


def _variants(root: Path) -> list[Variant]:
    default = loom_variants(AnthropicInstrumentor, root)[0]
    return [
        *official_variant(official(), "official OTel (no content)"),
        floor_variant(root),
        Variant("loom-otel default", default.instrument),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--root", type=Path, default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore", LoomOtelWarning)  # the unsigned-checkpoint warning
    root = store_root(args)
    sdk_times: Times = defaultdict(list)
    # The timer replaces the SDK's method before any instrumentation wraps it: it is the innermost call.
    sdk_create = messages_module.Messages.create
    messages_module.Messages.create = _timed(sdk_times, SDK, sdk_create)  # type: ignore[method-assign]
    try:
        with replayed(argparse.Namespace(transport="memory")) as (url, transport):
            client = client_of(url, transport)
            rows = _measure(lambda: client.messages.create(**REQUEST), _variants(root), sdk_times, args)
    finally:
        messages_module.Messages.create = sdk_create  # type: ignore[method-assign]
        remove(root)
    _report(rows, args)


def _measure(
    create: Callable[[], Any], variants: list[Variant], sdk_times: Times, args: argparse.Namespace
) -> dict[str, Times]:
    """Per variant (and ``bare``): each round's median of the whole call, of the SDK's own call and of
    each loom-otel part."""
    rows: dict[str, Times] = defaultdict(lambda: defaultdict(list))
    providers = {variant.name: provider() for variant in variants}
    for _ in range(50):
        create()
    for round_ in range(args.rounds):
        shift = round_ % len(variants)
        for variant in [None, *variants[shift:], *variants[:shift]]:
            name = "bare" if variant is None else variant.name
            times: Times = defaultdict(list)
            undo = (lambda: None) if variant is None else variant.instrument(providers[name])
            try:
                with _parts_timed(times) if variant is not None and variant.loom else nullcontext():
                    for _ in range(20):
                        create()
                    times.clear()
                    sdk_times.clear()
                    clock = time.perf_counter
                    for _ in range(args.calls):
                        started = clock()
                        create()
                        times["call"].append(clock() - started)
            finally:
                undo()
            force_flush()
            times[SDK] = list(sdk_times[SDK])
            for label, values in times.items():
                rows[name][label].append(statistics.median(values))
    for each in providers.values():
        each.shutdown()
    return rows


def _report(rows: dict[str, Times], args: argparse.Namespace) -> None:
    med = statistics.median
    print(
        f"anthropic create, 8 KiB new thinking per call, a new conversation per call, in-process transport; "
        f"medians of {args.rounds} rounds x {args.calls} calls (us, calling thread)"
    )
    bare_call, bare_sdk = med(rows["bare"]["call"]), med(rows["bare"][SDK])
    print(f"{'variant':44} {'call':>7} {'+us':>6} {'SDK inside':>11} {'SDK slower':>11} {'around SDK':>11}")
    for name, times in rows.items():
        call, sdk = med(times["call"]), med(times[SDK])
        print(
            f"{name:44} {call * 1e6:7.0f} {(call - bare_call) * 1e6:6.0f} {sdk * 1e6:11.0f}"
            f" {(sdk - bare_sdk) * 1e6:11.0f} {(call - sdk) * 1e6:11.0f}"
        )
    loom = rows.get("loom-otel default")
    if loom is None:
        return
    print("\nloom-otel default, by part (us per call; indented parts are inside the one above them)")
    for label, _, _ in PARTS:
        if label in loom:
            print(f"  {label:34} {med(loom[label]) * 1e6:7.1f}")


if __name__ == "__main__":
    main()
