"""loom-otel beside the other GenAI instrumentations, on both SDKs, in one interleaved run (issue 32).

    python benchmarks/bench_peers.py [--calls 200] [--rounds 3] [--transport memory|socket]
                                     [--only anthropic-create,anthropic-stream,gemini-generate,gemini-stream]

Four workloads, each a new reasoning text and signature per call (``_replay.py``): Anthropic
``messages.create`` with 8 KiB of thinking (``anthropic-create``) and the same streamed in 50 deltas and
iterated (``anthropic-stream``); Gemini ``generate_content`` with 8 KiB of thought text
(``gemini-generate``) and ``generate_content_stream`` iterated (``gemini-stream``, 50 chunks).

Variants (each instruments both SDKs on a tracer provider of its own; the harness is ``_overhead.py``,
whose ``bare`` is the uninstrumented call measured right before each variant in the same round):

- ``official OTel (no content)``: ``opentelemetry-instrumentation-genai-anthropic`` and
  ``opentelemetry-instrumentation-google-genai`` as installed (content capture off, their default);
- ``OpenLLMetry (text on spans)``: ``opentelemetry-instrumentation-anthropic`` and
  ``opentelemetry-instrumentation-google-generativeai`` (content on, their default; the Gemini one keeps
  no text of a stream);
- ``OpenInference (text, signatures on spans)``: ``openinference-instrumentation-anthropic`` and
  ``openinference-instrumentation-google-genai`` (content on, their default);
- ``official + upload hook (files, no loss)``: the official instrumentations with util-genai's
  ``UploadCompletionHook`` writing every call's messages to local files through fsspec, its queue sized
  so that nothing is dropped (its default of 20 drops under load; a drop is reported); the amortized
  figure waits for the uploads;
- ``loom-otel default``: file store, blob fsync on, journal ``batch``, no ``execution()``: every call
  a new conversation;
- ``loom-otel, one execution()``: the same calls joined in one ``execution()`` (one conversation);
- ``OpenLLMetry + loom-otel`` and ``OpenInference + loom-otel``: the peer wrapped outside loom-otel's
  default, so its spans carry the text loom-otel's scrubber removes (the provider only batches: the
  spans are scrubbed on the export thread); the same ``, simple processor``: a ``SimpleSpanProcessor``
  beside the batch one, so the spans are scrubbed on the calling thread.

The durable comparison (the upload hook, then loom-otel) comes first, as issue 49 asks. A variant whose
packages are not installed is left out (extras ``bench`` and ``peers``). Figures: see ``_overhead.py``
(wall median on the calling thread, its ratio to bare, its CPU time, the amortized cost); then the
scrubber's CPU time per call (``time.thread_time`` inside its span and log hooks, on the calling thread:
entering the call's texts into its index and reading every span, or marking a span that only batch
processors take, which their export thread scrubs), per workload and variant, and the scrubber's CPU
time per span on the export thread, by the span's instrumentation scope.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anthropic
import bench_anthropic
import bench_gemini
import httpx2
from _overhead import Variant, arguments, loom_variants, remove, replayed, run, store_root
from google import genai
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from loom_otel.core._scrub import _install
from loom_otel.core._scrub._registry import registry
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor

Factory = Callable[[], Any]


class _ScrubClock:
    """The scrubber's CPU time, per (workload, variant): on the calling thread, its span and log hooks
    (``_scrub_ending``, ``_scrub_emitted``: the scrub itself, or the mark that leaves a span to the batch
    processor's export thread), and on the export thread the scrub of the spans left to it
    (``_scrub_exported``, per span, by the span's instrumentation scope: the benchmark's providers
    batch). Wrapped before the first ``instrument()``, as the SDK's pipelines take what these names
    hold."""

    def __init__(self) -> None:
        self.spent_ns = 0
        self.variant: str | None = None
        self.calls: dict[tuple[str, str], list[int]] = {}
        self.exported: dict[str, list[int]] = {}
        for name in ("_scrub_ending", "_scrub_emitted"):
            setattr(_install, name, self._timed(getattr(_install, name)))
        _install._scrub_exported = self._exported(_install._scrub_exported)
        self.helper_ns = 0
        entering = registry.enter_captured

        def entered() -> None:  # on the scrubber's helper thread: entering captures while spans wait
            if threading.current_thread().name != "loom-otel-scrub":
                entering()
                return
            start = time.thread_time_ns()
            entering()
            self.helper_ns += time.thread_time_ns() - start

        vars(registry)["enter_captured"] = entered  # an instance attribute: the registry calls it too

    def _timed(self, hook: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
        def timed(pipeline: Any, record: Any) -> None:
            start = time.thread_time_ns()
            hook(pipeline, record)
            self.spent_ns += time.thread_time_ns() - start

        return timed

    def _exported(self, scrub: Callable[[Any], None]) -> Callable[[Any], None]:
        def timed(span: Any) -> None:
            start = time.thread_time_ns()
            scrub(span)
            scope = getattr(span.instrumentation_scope, "name", "?")
            self.exported.setdefault(scope, []).append(time.thread_time_ns() - start)

        return timed

    def variant_of(self, variant: Variant) -> Variant:
        """``variant`` with its calls attributed to it while it is instrumented."""

        def instrument(provider: TracerProvider) -> Callable[[], None]:
            undo = variant.instrument(provider)
            self.variant = variant.name

            def undone() -> None:
                self.variant = None
                undo()

            return undone

        return Variant(variant.name, instrument, variant.one_execution, variant.loom, variant.settle)

    def workload_of(self, name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        def call() -> Any:
            before = self.spent_ns
            try:
                return fn()
            finally:
                if self.variant is not None:
                    self.calls.setdefault((name, self.variant), []).append(self.spent_ns - before)

        return call

    def report(self, names: Sequence[str], variants: Sequence[Variant]) -> None:
        print("scrubber CPU per call on the calling thread (median, us), by workload and variant:")
        for name in names:
            for variant in variants:
                spent = self.calls.get((name, variant.name), [])
                if any(spent):
                    print(f"{name:16} {variant.name:46} {statistics.median(spent) / 1e3:8.1f}")
        if self.exported:
            print("scrubber CPU per span on the batch processor's export thread (median and mean, us), by scope:")
            for name, spans in sorted(self.exported.items()):
                median, mean = statistics.median(spans) / 1e3, statistics.fmean(spans) / 1e3
                print(f"{'':16} {name:46} {median:8.1f} {mean:8.1f}  ({len(spans)} spans)")
        batched = sum(len(spent) for (_, variant), spent in self.calls.items() if variant.endswith("+ loom-otel"))
        if self.helper_ns and batched:
            print(
                f"scrubber CPU entering captures on its helper thread: {self.helper_ns / 1e6:.1f} ms, "
                f"{self.helper_ns / 1e3 / batched:.1f} us per call of the batched peer variants ({batched} calls)"
            )


def _imported(module: str, name: str) -> Factory | None:
    """An instrumentor class, or ``None`` when its package is not installed."""
    try:
        found: Factory = getattr(__import__(module, fromlist=[name]), name)
    except ImportError:
        return None
    return found


def _both(name: str, factories: Sequence[Factory | None], **options: Any) -> list[Variant]:
    """One variant instrumenting both SDKs with the given instrumentors (none when one is missing)."""
    if any(factory is None for factory in factories):
        return []

    def instrument(provider: TracerProvider) -> Callable[[], None]:
        made = []
        for factory in factories:
            assert factory is not None
            instance = factory()
            instance.instrument(tracer_provider=provider, skip_dep_check=True, **options)
            made.append(instance)

        def undo() -> None:
            for instance in made:
                instance.uninstrument()

        return undo

    return [Variant(name, instrument, loom=False)]


class _Drops(logging.Handler):
    """Counts the upload hook's "upload queue is full" warnings (an upload it dropped)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "queue is full" in record.getMessage():
            self.count += 1


def _upload_variant(officials: Sequence[Factory | None], root: Path, calls: int) -> tuple[list[Variant], _Drops]:
    """The official instrumentations with util-genai's fsspec upload hook (extra ``bench``)."""
    drops = _Drops()
    try:
        from opentelemetry.util.genai._upload.completion_hook import UploadCompletionHook
    except ImportError:
        return [], drops
    logging.getLogger("opentelemetry.util.genai").addHandler(drops)
    # Up to four files per call (inputs, outputs, system instruction, tools): never a full queue.
    size = 8 * (calls + 100)
    (root / "upload").mkdir()
    hook = UploadCompletionHook(base_path=str(root / "upload"), max_queue_size=size)
    slots = hook._semaphore

    def settle() -> None:
        """Every upload queued so far is written: all the queue's slots are free again."""
        for _ in range(size):
            slots.acquire()
        for _ in range(size):
            slots.release()

    [variant] = _both("official + upload hook (files, no loss)", officials, completion_hook=hook) or [None]
    if variant is None:
        return [], drops
    return [Variant(variant.name, variant.instrument, loom=False, settle=settle)], drops


class _Both:
    """loom-otel's two instrumentors as one (``loom_variants`` instruments one factory's instance)."""

    def __init__(self) -> None:
        self._parts = (AnthropicInstrumentor(), GoogleGenAiInstrumentor())

    def instrument(self, **kwargs: Any) -> None:
        for part in self._parts:
            part.instrument(**kwargs)

    def uninstrument(self) -> None:
        for part in self._parts:
            part.uninstrument()


class _Discard(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _beside(name: str, peer: list[Variant], loom: Variant, *, simple: bool = False) -> list[Variant]:
    """The peer wrapped outside loom-otel (instrumented after it), on one tracer provider; ``simple``:
    the provider also has a ``SimpleSpanProcessor`` (its spans are scrubbed on the calling thread, as
    every span was before the scrub of batched spans moved to the export thread)."""
    if not peer:
        return []

    def instrument(provider: TracerProvider) -> Callable[[], None]:
        if simple and provider not in _simple:
            _simple.add(provider)
            provider.add_span_processor(SimpleSpanProcessor(_Discard()))
        undo_loom = loom.instrument(provider)
        undo_peer = peer[0].instrument(provider)

        def undo() -> None:
            undo_peer()
            undo_loom()

        return undo

    return [Variant(name, instrument)]


_simple: set[TracerProvider] = set()


def variants(root: Path, calls: int) -> tuple[list[Variant], _Drops]:
    officials = [bench_anthropic.official(), bench_gemini.official()]
    upload, drops = _upload_variant(officials, root, calls)
    loom = loom_variants(_Both, root)
    openllmetry = _both(
        "OpenLLMetry (text on spans)",
        [
            _imported("opentelemetry.instrumentation.anthropic", "AnthropicInstrumentor"),
            _imported("opentelemetry.instrumentation.google_generativeai", "GoogleGenerativeAiInstrumentor"),
        ],
    )
    openinference = _both(
        "OpenInference (text, signatures on spans)",
        [
            _imported("openinference.instrumentation.anthropic", "AnthropicInstrumentor"),
            _imported("openinference.instrumentation.google_genai", "GoogleGenAIInstrumentor"),
        ],
    )
    found = [
        *upload,
        Variant("loom-otel default", loom[0].instrument),
        Variant("loom-otel, one execution()", loom[0].instrument, one_execution=True),
        *_both("official OTel (no content)", officials),
        *openllmetry,
        *openinference,
        *_beside("OpenLLMetry + loom-otel", openllmetry, loom[0]),
        *_beside("OpenInference + loom-otel", openinference, loom[0]),
        *_beside("OpenLLMetry + loom-otel, simple processor", openllmetry, loom[0], simple=True),
        *_beside("OpenInference + loom-otel, simple processor", openinference, loom[0], simple=True),
    ]
    return found, drops


def clients(url: str | None, transport: httpx2.BaseTransport | None) -> tuple[anthropic.Anthropic, genai.Client]:
    """The two SDK clients of the replayed vendors (``_overhead.replayed``)."""
    return bench_anthropic.client_of(url, transport), bench_gemini.client_of(url, transport)


def workloads_of(claude: anthropic.Anthropic, gemini: genai.Client) -> list[tuple[str, Callable[[], Any]]]:
    """The four calls of issue 32."""
    request, model, config = bench_anthropic.REQUEST, bench_gemini.MODEL, bench_gemini.CONFIG

    def anthropic_create() -> Any:
        return claude.messages.create(**request)

    def anthropic_stream() -> None:
        with claude.messages.create(stream=True, **request) as events:
            for _ in events:
                pass

    def gemini_generate() -> Any:
        return gemini.models.generate_content(model=model, contents="Plan the trip.", config=config)

    def gemini_stream() -> None:
        for _ in gemini.models.generate_content_stream(model=model, contents="Plan the trip.", config=config):
            pass

    return [
        ("anthropic-create", anthropic_create),
        ("anthropic-stream", anthropic_stream),
        ("gemini-generate", gemini_generate),
        ("gemini-stream", gemini_stream),
    ]


def main() -> None:
    args = arguments()
    clock = _ScrubClock()
    root = store_root(args)
    try:
        with replayed(args) as (url, transport):
            found, drops = variants(root, args.calls)
            timed = [clock.variant_of(variant) for variant in found]
            workloads = [(name, clock.workload_of(name, fn)) for name, fn in workloads_of(*clients(url, transport))]
            run(
                f"anthropic {anthropic.__version__}, google-genai {genai.__version__}, 8 KiB new reasoning per "
                f"call, stores under {root}",
                workloads,
                timed,
                args,
            )
            clock.report([name for name, _ in workloads], timed)
        if drops.count:
            print(f"the upload hook dropped {drops.count} uploads (its queue was full)")
    finally:
        remove(root)


if __name__ == "__main__":
    main()
