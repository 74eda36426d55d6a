"""The harness both SDK benchmarks share: the replayed vendor, interleaved rounds, the variants, the table.

Transports (``--transport``): ``memory`` (default), an in-process ``httpx2.MockTransport``, so the bare
call is the SDK's own work and nothing else (the hardest ratio); ``socket``, a replay server in its own
process on 127.0.0.1 and the SDK's real HTTP transport (the cheapest real call). Both replay the same
recorded bytes with new reasoning text and signature per call (``_replay.py``).

Variants, the defaults first (each against ``bare``, the uninstrumented SDK call, measured right before
it in the same round; the order of the variants rotates from round to round):

- ``default``: loom-otel as configured by default: file store (blob fsync on), journal durability
  ``batch``, no ``execution()``, so every call is its own trace and so a new conversation (the worst
  case: a new execution per call);
- ``default, a new writer each round``: the same, with a store made afresh for each round's batch (a
  process's first few hundred captures: its packs are made as it goes);
- ``default, one execution()``: the same calls joined in one ``execution()`` (one agent loop);
- ``tuned: no fsync, journal os``: ``LOOM_OTEL_STORE_FSYNC=false`` and ``LOOM_OTEL_JOURNAL_DURABILITY=os``,
  a new conversation per call (what the library costs without the disk);
- ``tuned: no fsync, journal os, one execution()``;
- ``official OTel (no content)``: the official OpenTelemetry instrumentation of the same SDK, which keeps
  no content (extra ``bench``), when it is installed.

Each variant's configuration is made once and kept across rounds (as an application keeps its store and
journal), except the new-writer variant's, which shows what a writer's start costs. Each variant has a
tracer provider of its own: loom-otel adds its reasoning scrubber to the provider it is given, which
rewrites every other instrumentation's spans (10-35 us per span here, by how many attributes it has),
and that belongs to loom-otel's cost beside another instrumentation, not to the official one alone.

Figures per call: the median wall time on the calling thread, its ratio to ``bare`` and the
microseconds added; the calling thread's median CPU time (``time.thread_time``: what the machine's
noise does not inflate); and the amortized wall time (the whole batch plus what the variant leaves
running, divided by the calls: ``force_flush`` for loom-otel, which waits for the background fsyncs; a
variant's own ``settle`` step, e.g. the upload hook's uploads). Ratios are medians of the per-round ratios; ``spread``
is their range (the machine's noise).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from _replay import MARK, Recording
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from loom_otel.core import FileReasoningStore, LoomOtelWarning, ReasoningConfig, execution
from loom_otel.core._runtime._config import reset_runtime

try:
    from loom_otel.core import force_flush
except ImportError:  # an older loom-otel measured with this harness: nothing to wait for but the calls

    def force_flush(timeout_millis: int = 30000) -> bool:
        return True


__all__ = [
    "Variant",
    "arguments",
    "loom_variants",
    "official_variant",
    "provider",
    "remove",
    "replayed",
    "run",
    "store_root",
]


class _Discard(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--transport", choices=("memory", "socket"), default="memory")
    parser.add_argument("--only", default="", help="comma-separated call names to run (default: all)")
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help="where the variants' stores and journals go (default: a new directory beside loom-otel's "
        "default journal, in the user's state directory: the file system a default setup writes to)",
    )
    return parser.parse_args()


def store_root(args: argparse.Namespace) -> Path:
    """A new, empty directory for the run's stores and journals (``--root``, else under the user's state
    directory, where loom-otel's default journal lives; the file system matters: creating a directory
    costs 30 us on one and 200 us on another of the same machine)."""
    from loom_otel.core._runtime._config import default_journal_dir

    parent = args.root if args.root is not None else default_journal_dir().parent / "bench"
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="loom-bench-", dir=parent))


@contextlib.contextmanager
def replayed(args: argparse.Namespace) -> Iterator[tuple[str | None, httpx2.BaseTransport | None]]:
    """(base URL, transport) for the SDK client: 8 KiB of new reasoning per call, streams in 50 deltas.
    ``memory``: no URL of its own, an in-process transport; ``socket``: a server URL, the SDK's own transport."""
    options: dict[str, Any] = {"reasoning_text": MARK, "thinking_size": 8192, "stream_chunks": 50, "strict": False}
    if args.transport == "memory":
        yield None, Recording(**options).transport()
        return
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_replay.py")), json.dumps(options)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip(), None
    finally:
        server.terminate()
        server.wait()


@dataclass(frozen=True)
class Variant:
    """One instrumented configuration: ``instrument(provider)`` returns the function that undoes it."""

    name: str
    instrument: Callable[[TracerProvider], Callable[[], None]]
    one_execution: bool = False
    loom: bool = True
    settle: Callable[[], object] | None = None
    """What the amortized figure waits for after a batch (default: loom-otel's ``force_flush`` for a
    loom-otel variant, nothing for another; the upload hook's variant waits for its uploads)."""

    def settler(self) -> Callable[[], object] | None:
        if self.settle is not None:
            return self.settle
        return _force_flush if self.loom else None


def loom_variants(instrumentor: Callable[[], Any], root: Path) -> list[Variant]:
    """The loom-otel configurations, the defaults first (each in its own store; one journal)."""
    reset_runtime()  # the run's stores are made here, once per configuration

    def using(config_of: Callable[[], ReasoningConfig]) -> Callable[[TracerProvider], Callable[[], None]]:
        def instrument(provider: TracerProvider) -> Callable[[], None]:
            instance = instrumentor()
            config = config_of()
            instance.instrument(tracer_provider=provider, config=config)

            def undo() -> None:
                instance.uninstrument()
                if isinstance(config.store, FileReasoningStore):
                    config.store.close()  # a new writer's: the next round makes another

            return undo

        return instrument

    def default() -> ReasoningConfig:
        return ReasoningConfig(store=f"file://{root}/default")

    def new_writer() -> ReasoningConfig:
        return ReasoningConfig(store=FileReasoningStore(root / "new-writer"))

    def tuned() -> ReasoningConfig:
        return ReasoningConfig(store=f"file://{root}/tuned", store_fsync=False, journal_durability="os")

    return [
        Variant("default", using(default)),
        Variant("default, a new writer each round", using(new_writer)),
        Variant("default, one execution()", using(default), one_execution=True),
        Variant("tuned: no fsync, journal os", using(tuned)),
        Variant("tuned: no fsync, journal os, one execution()", using(tuned), one_execution=True),
    ]


def official_variant(factory: Callable[[], Any] | None, label: str) -> list[Variant]:
    """The official OTel instrumentation as a variant (none when it is not installed)."""
    if factory is None:
        return []

    def instrument(provider: TracerProvider) -> Callable[[], None]:
        instance = factory()
        instance.instrument(tracer_provider=provider, skip_dep_check=True)
        undo: Callable[[], None] = instance.uninstrument
        return undo

    return [Variant(label, instrument, loom=False)]


def remove(root: Path) -> None:
    """Close the run's journals (their checkpoints would be written at exit) and stores (their pools make
    ready directories in the background), then remove its directory."""
    from loom_otel.core._evidence._journal import _writer as _journal
    from loom_otel.core._evidence._store import _file

    _journal._close_all()
    for store in list(_file._writers):
        if store.root.is_relative_to(root):
            store.close()
    shutil.rmtree(root, ignore_errors=True)


@dataclass
class _Batch:
    wall: list[float]
    cpu: list[float]
    amortized: float


def provider() -> TracerProvider:
    """A tracer provider whose spans are batched and discarded (one per variant)."""
    made = TracerProvider()
    made.add_span_processor(BatchSpanProcessor(_Discard()))
    return made


def _force_flush() -> None:
    if not force_flush(60_000):
        print("force_flush did not finish", file=sys.stderr)


def _batch(fn: Callable[[], Any], calls: int, *, settle: Callable[[], object] | None = None) -> _Batch:
    wall, cpu = [], []
    started = time.perf_counter()
    for _ in range(calls):
        w, c = time.perf_counter(), time.thread_time()
        fn()
        cpu.append(time.thread_time() - c)
        wall.append(time.perf_counter() - w)
    if settle is not None:
        settle()
    return _Batch(wall, cpu, (time.perf_counter() - started) / calls)


def run(
    title: str,
    calls: Sequence[tuple[str, Callable[[], Any]]],
    variants: Sequence[Variant],
    args: argparse.Namespace,
) -> None:
    warnings.simplefilter("ignore", LoomOtelWarning)  # the unsigned-checkpoint warning, once per variant
    # One tracer provider per variant: what an instrumentation adds to its provider (loom-otel's reasoning
    # scrubber, which rewrites every other instrumentation's spans) is not charged to another variant.
    providers = {variant.name: provider() for variant in variants}
    only = {name for name in args.only.split(",") if name}
    calls = [(name, fn) for name, fn in calls if not only or name in only]
    for _, fn in calls:  # warm up imports, pools and caches
        for _ in range(20):
            fn()
    # (call, variant) -> per-round figures: (bare batch, variant batch)
    results: dict[tuple[str, str], list[tuple[_Batch, _Batch]]] = {}
    for round_ in range(args.rounds):
        order = list(variants[round_ % len(variants) :]) + list(variants[: round_ % len(variants)])
        for name, fn in calls:
            for variant in order:
                bare = _batch(fn, args.calls)
                undo = variant.instrument(providers[variant.name])
                scope = execution(f"bench-{round_}") if variant.one_execution else contextlib.nullcontext()
                try:
                    with scope:
                        for _ in range(5):  # the variant's first calls open its journal and store
                            fn()
                        measured = _batch(fn, args.calls, settle=variant.settler())
                finally:
                    undo()
                results.setdefault((name, variant.name), []).append((bare, measured))
    for each in providers.values():
        each.shutdown()
    _report(title, args, [name for name, _ in calls], variants, results)


def _report(
    title: str,
    args: argparse.Namespace,
    names: list[str],
    variants: Sequence[Variant],
    results: dict[tuple[str, str], list[tuple[_Batch, _Batch]]],
) -> None:
    med = statistics.median
    print(f"{title}, {args.transport} transport, {args.calls} calls x {args.rounds} rounds, interleaved")
    print("wall = median per call on the calling thread; cpu = its CPU time; amortized = batch + its settling")
    width = max(9, *(len(name) for name in names))
    header = (
        f"{'call':{width}} {'variant':46} {'wall us':>8} {'ratio':>6} {'+us':>6} {'spread':>11}"
        f" {'cpu ratio':>9} {'amort. ratio':>12} {'+us':>6}"
    )
    print(header)
    for name in names:
        pairs = [p for v in variants for p in results[(name, v.name)]]
        bare_wall = med(med(b.wall) for b, _ in pairs)
        bare_cpu = med(med(b.cpu) for b, _ in pairs)
        bare_amortized = med(b.amortized for b, _ in pairs)
        print(
            f"{name:{width}} {'bare':46} {bare_wall * 1e6:8.0f} {1.0:6.2f} {0:6.0f} {'':>11}"
            f" {bare_cpu * 1e6:7.0f}us {bare_amortized * 1e6:10.0f}us"
        )
        for variant in variants:
            rounds = results[(name, variant.name)]
            ratios = [med(v.wall) / med(b.wall) for b, v in rounds]
            cpu = med(med(v.cpu) / med(b.cpu) for b, v in rounds)
            amortized = [v.amortized / b.amortized for b, v in rounds]
            added = med(med(v.wall) - med(b.wall) for b, v in rounds)
            added_amortized = med(v.amortized - b.amortized for b, v in rounds)
            spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
            print(
                f"{name:{width}} {variant.name:46} {med(med(v.wall) for _, v in rounds) * 1e6:8.0f}"
                f" {med(ratios):6.2f} {added * 1e6:6.0f} {spread:>11} {cpu:9.2f}"
                f" {med(amortized):12.2f} {added_amortized * 1e6:6.0f}"
            )
