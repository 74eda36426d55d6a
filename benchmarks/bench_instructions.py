"""Instructions per model call, counted rather than timed: the bare SDK, the official instrumentation,
the floor (Anthropic ``create``), loom-otel's default, and loom-otel's default with one part taken out at a time,
so what each part costs is a difference of two counts.

    python benchmarks/bench_instructions.py [--calls 300] [--warm 50] [--jobs N] [--counter cachegrind|none]
                                            [--call create|stream|gemini-generate|gemini-stream] [--dilation 30]

Timed figures on a shared 2-core machine move by +-0.03-0.05x from run to run, and taking a part out
moves them by less than that (README, Benchmarks). Counted instructions repeat to about 0.1%: each
variant runs in processes of its own under valgrind's ``cachegrind`` with the hash seed fixed, and a
call's count is ``(count after warm + calls) - (count after warm)``, divided by ``calls``. The counts
are user-space instructions of every thread (the SDK, loom-otel, the span processor, the group commit);
the kernel's work (the pack ``writev``, the journal ``write``, the syncs) and cache misses are not in
them, which is why a count ratio is lower than the timed ratio of the same variant. Under valgrind a
call takes about 30 times as long, so the background work that runs on a clock would run once per call
instead of once per 20-45 calls: ``--dilation`` (30) stretches the journal's group-commit window and
the span processor's export delay by that factor, so a group holds as many calls as in a timed run. Use it to find and
price work, and the timed benchmarks (``bench_anthropic.py``) for the figures the targets are about.

The calls are ``bench_anthropic.py``'s (``create``, ``stream``) and ``bench_gemini.py``'s (``gemini-generate``,
``gemini-stream``): 8 KiB of new thinking per reply, the in-process transport, a new
conversation per call (no ``execution()``), loom-otel's defaults (file store, blob fsync on, journal
``batch``). A part is taken out by replacing one internal function with one that does nothing; a
variant without it is not a configuration anyone can run. ``--counter none`` runs every variant in
one process, one after another, without valgrind (that every variant still runs; its figures mean
nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import anthropic
import bench_anthropic
import bench_gemini
import httpx2
from _overhead import loom_variants, provider, remove, replayed, store_root
from bench_floor import floor_variant
from google import genai
from opentelemetry.sdk.trace import TracerProvider

from loom_otel.core import FileReasoningStore, LoomOtelWarning, force_flush
from loom_otel.core._evidence._journal import _writer
from loom_otel.core._evidence._journal._writer import Journal, JournalEntry
from loom_otel.core._evidence._store._protocol import Envelope
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.anthropic._adapter import AnthropicAdapter
from loom_otel.instrumentation.anthropic._continuation import AnthropicContinuation
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.instrumentation.google_genai._adapter import GeminiAdapter
from loom_otel.instrumentation.google_genai._continuation import GeminiContinuation

_COUNT = re.compile(r"I\s+refs:\s+([\d,]+)")
_ENTRY = JournalEntry("0" * 32, 1, "0" * 64, "0" * 64, 0)


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _put_nothing(store: FileReasoningStore, sealed: Envelope) -> str:
    return sealed.ref


def _append_nothing(journal: Journal, type_: str, attributes: object) -> JournalEntry:
    return _ENTRY


Part = tuple[str, type, str, Callable[..., object]]


def _parts(adapter: type, layer: tuple[type, str], continuation: type) -> tuple[Part, ...]:
    """Parts of loom-otel's call, each taken out by one replacement (README, Benchmarks): one vendor's
    request guard, continuation layer and binding record, then the store and journal every vendor shares."""
    return (
        ("the request guard", adapter, "check_request", _nothing),
        ("the continuation layer (pass and binding record)", *layer, _nothing),
        ("the binding record", continuation, "record", _nothing),
        ("the store's put (seal kept)", FileReasoningStore, "put", _put_nothing),
        ("the journal record", Journal, "append", _append_nothing),
    )


@dataclass(frozen=True)
class Vendor:
    """One SDK's side of the run: its calls, loom-otel's instrumentor, the official one, the parts."""

    name: str
    version: str
    instrumentor: Callable[[], Any]
    official: Callable[[], Any]
    """The official instrumentor's class (``None`` without the extra ``bench``)."""
    calls: dict[str, Callable[[Any], None]]
    """The workloads, by ``--call`` name: each makes one call with an SDK client."""
    client_of: Callable[[str | None, httpx2.BaseTransport | None], Any]
    parts: tuple[Part, ...]
    floor: tuple[str, ...] = ()
    """The calls whose work ``bench_floor.py``'s minimal variant does (it does not stream)."""


def _anthropic_create(client: anthropic.Anthropic) -> None:
    client.messages.create(**bench_anthropic.REQUEST)


def _anthropic_stream(client: anthropic.Anthropic) -> None:
    with client.messages.create(stream=True, **bench_anthropic.REQUEST) as events:
        for _ in events:
            pass


def _gemini_generate(client: genai.Client) -> None:
    client.models.generate_content(model=bench_gemini.MODEL, contents="Plan the trip.", config=bench_gemini.CONFIG)


def _gemini_stream(client: genai.Client) -> None:
    chunks = client.models.generate_content_stream(
        model=bench_gemini.MODEL, contents="Plan the trip.", config=bench_gemini.CONFIG
    )
    for _ in chunks:
        pass


_VENDORS: tuple[Vendor, ...] = (
    Vendor(
        "anthropic",
        anthropic.__version__,
        AnthropicInstrumentor,
        bench_anthropic.official,
        {"create": _anthropic_create, "stream": _anthropic_stream},
        bench_anthropic.client_of,
        _parts(AnthropicAdapter, (AnthropicAdapter, "prepare"), AnthropicContinuation),
        floor=("create",),
    ),
    Vendor(
        "google-genai",
        genai.__version__,
        GoogleGenAiInstrumentor,
        bench_gemini.official,
        {"gemini-generate": _gemini_generate, "gemini-stream": _gemini_stream},
        bench_gemini.client_of,
        _parts(GeminiAdapter, (GeminiContinuation, "session"), GeminiContinuation),
    ),
)
CALLS: tuple[str, ...] = tuple(call for vendor in _VENDORS for call in vendor.calls)


def vendor_of(call: str) -> Vendor:
    return next(vendor for vendor in _VENDORS if call in vendor.calls)


def _instrumented(root: Path, call: str) -> dict[str, Callable[[TracerProvider], Callable[[], None]]]:
    """Every variant but ``bare``: what instruments a provider and returns its undoing."""
    vendor = vendor_of(call)
    default = loom_variants(vendor.instrumentor, root)[0].instrument
    variants: dict[str, Callable[[TracerProvider], Callable[[], None]]] = {
        "official OTel (no content)": functools.partial(_official, vendor)
    }
    if call in vendor.floor:
        variants["floor: same work, minimal (not loom-otel)"] = floor_variant(root).instrument
    variants["default"] = default
    for part, owner, name, replacement in vendor.parts:
        variants[f"default without {part}"] = _without(default, owner, name, replacement)
    return variants


def _official(vendor: Vendor, provider_: TracerProvider) -> Callable[[], None]:
    instrumentor = vendor.official()
    if instrumentor is None:
        raise SystemExit("the official instrumentation is not installed (extra `bench`)")
    instance = instrumentor()
    instance.instrument(tracer_provider=provider_, skip_dep_check=True)
    undo: Callable[[], None] = instance.uninstrument
    return undo


def _without(
    instrument: Callable[[TracerProvider], Callable[[], None]], owner: type, name: str, replacement: object
) -> Callable[[TracerProvider], Callable[[], None]]:
    """``instrument`` with ``owner.name`` replaced (``mock.patch.object`` fails on a name that is gone)."""

    def instrument_without(provider_: TracerProvider) -> Callable[[], None]:
        removed = mock.patch.object(owner, name, replacement)
        removed.start()
        undo = instrument(provider_)

        def undo_all() -> None:
            undo()
            removed.stop()

        return undo_all

    return instrument_without


def child(variant: str, root: Path, call: str, warm: int, calls: int, dilation: float) -> None:
    """One process's run: instrument, ``warm`` calls, then ``calls`` more (0 for the baseline count)."""
    _writer.BATCH_WINDOW = _writer.BATCH_WINDOW * dilation  # type: ignore[misc]
    run(variant, root, call, warm, calls)


def run(variant: str, root: Path, call: str, warm: int, calls: int) -> int:
    """Instrument, ``warm`` calls, ``calls`` more, undo: the nanoseconds the ``calls`` took."""
    warnings.simplefilter("ignore", LoomOtelWarning)  # the unsigned-checkpoint warning
    vendor = vendor_of(call)
    with replayed(argparse.Namespace(transport="memory")) as (url, transport):
        client, fn = vendor.client_of(url, transport), vendor.calls[call]
        traced = provider()
        undo = _nothing if variant == "bare" else _instrumented(root, call)[variant](traced)
        for _ in range(warm):
            fn(client)
        force_flush()
        started = time.perf_counter_ns()
        for _ in range(calls):
            fn(client)
        force_flush()
        took = time.perf_counter_ns() - started
        undo()
        traced.shutdown()
    return took


def _count(args: argparse.Namespace, root: Path, variant: str, calls: int) -> int:
    """The instructions one child process ran under cachegrind."""
    command = [
        sys.executable,
        __file__,
        "--child",
        variant,
        "--root",
        str(root),
        "--call",
        args.call,
        "--warm",
        str(args.warm),
        "--calls",
        str(calls),
        "--dilation",
        str(args.dilation),
    ]
    environment = {**os.environ, "PYTHONHASHSEED": "0", "OTEL_BSP_SCHEDULE_DELAY": str(int(5000 * args.dilation))}
    valgrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    done = subprocess.run(valgrind + command, check=False, env=environment, capture_output=True, text=True)
    found = _COUNT.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{variant}: the counted run failed:\n{done.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


@contextlib.contextmanager
def _run_root(args: argparse.Namespace) -> Iterator[Path]:
    root = store_root(args)
    try:
        yield root
    finally:
        remove(root)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warm", type=int, default=50)
    parser.add_argument("--call", choices=CALLS, default="create")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--counter", choices=("cachegrind", "none"), default="cachegrind")
    parser.add_argument("--dilation", type=float, default=None, help="default: 30 under valgrind, 1 without")
    parser.add_argument("--root", type=Path, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dilation is None:
        args.dilation = 30.0 if args.counter == "cachegrind" else 1.0
    if args.child is not None:
        child(args.child, args.root, args.call, args.warm, args.calls, args.dilation)
        return
    if args.counter == "cachegrind" and shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt install valgrind), or use --counter none")
    with _run_root(args) as root:
        vendor = vendor_of(args.call)
        names = ["bare", *_instrumented(root, args.call)]
        if vendor.official() is None:
            names.remove("official OTel (no content)")
        if args.counter == "none":  # every variant in this process, one after another
            per_call = {name: run(name, root, args.call, args.warm, args.calls) / args.calls for name in names}
        else:
            runs = [(name, calls) for name in names for calls in (0, args.calls)]
            with ThreadPoolExecutor(max(1, args.jobs)) as pool:
                counts = dict(zip(runs, pool.map(lambda run_: _count(args, root, *run_), runs), strict=True))
            per_call = {name: (counts[(name, args.calls)] - counts[(name, 0)]) / args.calls for name in names}
    _report(args, per_call)


def _report(args: argparse.Namespace, per_call: dict[str, float]) -> None:
    unit = "instructions" if args.counter == "cachegrind" else "ns (--counter none: not a measurement)"
    vendor = vendor_of(args.call)
    print(
        f"{vendor.name} {vendor.version} {args.call}, 8 KiB new thinking per call, a new conversation per "
        f"call, defaults; {unit} per call ({args.calls} calls after {args.warm}, hash seed 0, clocks "
        f"stretched {args.dilation:g}x)"
    )
    bare, default = per_call["bare"], per_call["default"]
    print(f"{'variant':58} {'per call':>12} {'ratio':>7} {'added':>11}")
    for name, count in per_call.items():
        if name.startswith("default without "):
            continue
        print(f"{name:58} {count:12,.0f} {count / bare:7.3f} {count - bare:11,.0f}")
    print(f"{'what a part of the default costs (default - default without it)':58} {'':>12} {'share':>7} {'':>11}")
    for name, count in per_call.items():
        if name.startswith("default without "):
            part = default - count
            share = part / (default - bare) if default != bare else 0.0
            print(f"  {name.removeprefix('default without '):56} {part:12,.0f} {share:7.1%}")


if __name__ == "__main__":
    main()
