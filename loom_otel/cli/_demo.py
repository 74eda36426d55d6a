"""``loom-otel demo``: agent loops on the real vendor SDKs against the built-in simulator, instrumented
exactly as an application would be, exported through the chained exporter, then the audit report.
No API key, no network."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import shlex
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from loom_otel.cli._invocation import command_line
from loom_otel.cli._table import render_table
from loom_otel.core import environment_variables as env

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["register"]

VIEWER_PORT: Final = 8377
"""Where the demo's closing hint serves the viewer (``loom-otel serve``'s default port)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo", help="run instrumented agent loops against the built-in simulator, then the audit report"
    )
    parser.add_argument("--dir", type=Path, help="where the store, journal and archive go (default: a new temp dir)")
    parser.add_argument(
        "--phoenix",
        metavar="URL",
        help="also send the spans to Arize Phoenix at URL (e.g. http://127.0.0.1:6006), message content on: "
        "each call's Reasoning block there links to the viewer",
    )
    parser.set_defaults(func=run)


def _say(step: str) -> None:
    print(f"\n== {step}", flush=True)


def _events(spans: Any, name: str) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for s in spans for e in s.events if e.name == name]


def _run_number(journal_dir: Path) -> int:
    """1 for a new directory; else one more than the demo runs its journal already holds, so that a
    second run in the same ``--dir`` reports its own executions, not both runs' together."""
    if not journal_dir.is_dir():
        return 1
    from loom_otel.audit._executions import list_executions

    held = {s.execution_id for s in list_executions(journal_dir)}
    number = 1
    while _execution_id("demo-anthropic", number) in held or _execution_id("demo-gemini", number) in held:
        number += 1
    return number


def _execution_id(name: str, run: int) -> str:
    return name if run == 1 else f"{name}-{run}"


@dataclass(frozen=True, slots=True)
class _Places:
    """Where one demo run writes: the store, the journal, the collector's archive, the checkpoint key."""

    root: Path
    store: Path
    journal: Path
    archive: Path
    key: Path


@dataclass(frozen=True, slots=True)
class _Executions:
    """The two executions of this run (numbered after the runs the directory already holds)."""

    anthropic: str
    gemini: str


def run(args: argparse.Namespace) -> int:
    """The demo as steps: places, pipeline, the agent loops, the audit read-back, verify, the hints."""
    started = time.perf_counter()
    places = _places(args.dir)
    executions = _executions(places)
    seen, provider = _pipeline(places, args.phoenix)
    made = _drive(places, executions, seen, provider)
    _read_back(places, made)
    ok = _verify(places)
    captured = _events(seen.get_finished_spans(), "loom.reasoning.captured")
    _try_next(places, executions, captured)
    print(f"done in {time.perf_counter() - started:.1f} s")
    _viewer_hint(places, captured, args.phoenix)
    _erase_hint(places, executions)
    return 0 if ok else 1


def _places(chosen: Path | None) -> _Places:
    """``--dir`` (or a new temporary directory) and what goes in it, told to the user."""
    root = (chosen or Path(tempfile.mkdtemp(prefix="loom-otel-demo-"))).absolute()
    root.mkdir(parents=True, exist_ok=True)
    store = root / "store"  # the journal where every command looks for it: beside the file store
    places = _Places(root, store, store / "journal", root / "collector" / "traces.jsonl", root / "checkpoint.key")
    places.archive.parent.mkdir(parents=True, exist_ok=True)
    print(f"loom-otel demo in {root}")
    print(f"  store    {places.store}   (readable reasoning, sealed per execution)")
    print(f"  journal  {places.journal}   (hash-chained audit records)")
    print(f"  archive  {places.archive}   (what a collector's file exporter keeps)")
    print(f"  key      {places.key}   (signs journal checkpoints)")
    return places


def _executions(places: _Places) -> _Executions:
    number = _run_number(places.journal)
    executions = _Executions(_execution_id("demo-anthropic", number), _execution_id("demo-gemini", number))
    if number > 1:
        print(
            f"  this directory holds {number - 1} earlier run(s): "
            f"this one is {executions.anthropic} and {executions.gemini}"
        )
    return executions


def _pipeline(places: _Places, phoenix: str | None = None) -> tuple[InMemorySpanExporter, TracerProvider]:
    """A tracer provider as an application builds one: the spans kept in memory for the report, and the
    chained exporter (journal, then a collector's file exporter) behind a batch processor; with
    ``phoenix``, the spans also go to Phoenix over OTLP/HTTP, message content on (``SPAN_ONLY``, unless
    the environment chose a mode), so that each answer's reasoning part is a link to the viewer."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from loom_otel.exporters.chain import ChainedSpanExporter
    from loom_otel.testing import OtlpJsonFileExporter

    seen = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(seen))
    chained = ChainedSpanExporter(OtlpJsonFileExporter(places.archive), journal=places.journal)
    provider.add_span_processor(BatchSpanProcessor(chained))
    if phoenix:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        from loom_otel.core.runtime import MESSAGE_CONTENT_ENV as CONTENT

        os.environ.setdefault(CONTENT, "SPAN_ONLY")
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix.rstrip('/')}/v1/traces")))
        print(f"  phoenix  {phoenix}   (the spans, message content on)")
    return seen, provider


def _drive(
    places: _Places, executions: _Executions, seen: InMemorySpanExporter, provider: TracerProvider
) -> dict[str, int]:
    """Instrument both SDKs, run the agent loops against the strict simulator, uninstrument and flush;
    the model calls made, per execution."""
    from loom_otel.cli._demo_agents import anthropic_loop, edited_history, gemini_loop
    from loom_otel.core import ReasoningConfig, execution
    from loom_otel.core.journal import generate_key
    from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
    from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
    from loom_otel.testing.simulator import Simulator

    if not places.key.exists():
        generate_key(places.key)  # what `loom-otel keygen` writes: checkpoints are Ed25519-signed
    config = ReasoningConfig(
        store=f"file://{places.store}",
        journal=places.journal,
        checkpoint_key=places.key,
        viewer_url=f"http://127.0.0.1:{VIEWER_PORT}",
    )
    instrumentors: list[AnthropicInstrumentor | GoogleGenAiInstrumentor] = [
        AnthropicInstrumentor(),
        GoogleGenAiInstrumentor(),
    ]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider, config=config)
    sim = Simulator(strict=True)
    try:
        _say("anthropic: a tool loop through messages.stream() (real anthropic SDK, strict simulator)")
        with execution(executions.anthropic, tenant="acme", principal="alice"):
            calls, history = anthropic_loop(sim)
            print(f"  the tool loop: {calls} model calls, every assistant turn sent back as returned: accepted")
            _say("anthropic: the app edits its first question and continues the same history")
            refused, answer = edited_history(sim, history)
            calls += 1  # the follow-up; the bare call the vendor refused ran uninstrumented
        print(f"  without loom-otel the vendor answers: {refused}")
        print(f"  with loom-otel: accepted ({answer.stop_reason}); what was dropped, as span events:")
        for event in _events(seen.get_finished_spans(), "loom.reasoning.dropped"):
            print(
                f"    loom.reasoning.dropped reason={event['loom.reasoning.drop.reason']} "
                f"count={event['loom.reasoning.drop.count']} at {list(event['loom.reasoning.drop.positions'])}"
            )
        _say("gemini: a chat with automatic function calling (real google-genai SDK, strict simulator)")
        with execution(executions.gemini, tenant="acme", principal="alice"):
            requests = gemini_loop(sim)
        print(f"  1 send_message, {requests} model calls, thought summaries and signatures captured")
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
        provider.shutdown()  # flushes the chained exporter: every journal record reaches the archive
    return {executions.anthropic: calls, executions.gemini: requests}


def _read_back(places: _Places, made: dict[str, int]) -> None:
    """``read_reasoning`` of each execution, as a table of its parts."""
    from loom_otel.audit import read_reasoning
    from loom_otel.core import FileReasoningStore

    store = FileReasoningStore(places.store)
    for execution_id, calls in made.items():
        _say(f"audit: read_reasoning(journal, store, execution_id={execution_id!r}, tenant='acme')")
        reading = read_reasoning(places.journal, store, execution_id=execution_id, tenant="acme")
        captured_calls = sum(len(step.attempts) for step in reading.steps)
        print(
            f"  {calls} model calls made, {captured_calls} captured: {len(reading.steps)} steps, "
            f"{len(reading.parts)} reasoning parts"
        )
        rows = [
            (
                p.step_id[:16],
                attempt.provider,
                attempt.response_model,
                p.index,
                p.kind,
                p.status,
                p.size,
                (p.digest[:12] or "-"),
            )
            for step in reading.steps
            for attempt in step.attempts
            for p in attempt.parts
        ]
        print(render_table(("step", "provider", "model", "part", "kind", "status", "size", "digest"), rows))


def _verify(places: _Places) -> bool:
    """``verify`` the journal and the collector's archive, checkpoints signed by the demo's key."""
    from loom_otel.audit import verify
    from loom_otel.core.journal import load_public_key

    _say("verify: the journal and the collector archive (checkpoints must carry our signature)")
    ok = True
    trusted = [load_public_key(places.key)]
    for source in (places.journal, places.archive):
        report = verify(source, public_keys=trusted, require_signed=True)
        ok = ok and report.ok
        print(
            f"  {source.name:14} {report.records} records, {len(report.origins)} chain(s): "
            f"{'ok' if report.ok else '; '.join(report.problems)}"
        )
    return ok


def _try_next(places: _Places, executions: _Executions, captured: list[dict[str, Any]]) -> None:
    """What the run left, and the commands that look at it."""
    print(
        f"\n{len(captured)} loom.reasoning.captured events carry refs, digests and sizes only; "
        f"readable text is in {places.store / 'blobs'}."
    )
    print("Try (the journal is found beside the store):")
    print(f"  {command_line('audit', 'list', '--store', f'file://{places.store}')}")
    show = ("audit", "show", "--execution", executions.anthropic, "--tenant", "acme")
    print(f"  {command_line(*show, '--store', f'file://{places.store}', '--text')}")


def _signed(places: _Places, *args: str) -> str:
    """``command_line(*args)`` run with the demo's checkpoint key, as the demo's apps are: the records
    ``serve`` and ``erase`` append are anchored by checkpoints signed like the captures'."""
    return f"{env.LOOM_OTEL_CHECKPOINT_KEY}={shlex.quote(str(places.key))} {command_line(*args)}"


def _phoenix_project(phoenix: str) -> str | None:
    """The opaque id of Phoenix's ``default`` project (what its trace pages are addressed by), if it answers."""
    try:
        with urllib.request.urlopen(f"{phoenix.rstrip('/')}/v1/projects", timeout=10) as answer:
            projects = json.loads(answer.read()).get("data") or []
    except (OSError, ValueError, AttributeError):
        return None
    return next((str(p["id"]) for p in projects if isinstance(p, dict) and p.get("name") == "default"), None)


def _viewer_hint(places: _Places, captured: list[dict[str, Any]], phoenix: str | None = None) -> None:
    """The one command that serves what the demo captured, and the page to open with a token made now
    (the tokens file keeps only its SHA-256); with ``phoenix``, ``--trace-url`` back to its trace pages
    and where the link to the viewer is in Phoenix."""
    token = secrets.token_urlsafe(24)
    tokens = places.root / "viewer-tokens.toml"
    tokens.write_text(f'[tokens]\nalice = "sha256:{hashlib.sha256(token.encode()).hexdigest()}"\n', encoding="utf-8")
    url = next((str(e["loom.reasoning.url"]) for e in captured if "loom.reasoning.url" in e), None)
    serve: tuple[str, ...] = ("serve", "--journal", str(places.journal), "--store", f"file://{places.store}")
    serve = (*serve, "--tokens", str(tokens))
    if phoenix:
        project = _phoenix_project(phoenix) or "<the default project's id: GET /v1/projects>"
        serve = (*serve, "--trace-url", f"{phoenix.rstrip('/')}/projects/{project}/traces/{{trace_id}}")
    print("\nOpen the reasoning behind a trace in a browser (every span carries loom.reasoning.url):")
    print(f"  {_signed(places, *serve, '--port', str(VIEWER_PORT))}")
    print(f"  then open {url} and sign in as alice with the token {token}")
    if phoenix:
        print(
            f"  or in Phoenix ({phoenix}), open a chat span: its Output's assistant message, switched from Text to "
            "Markdown, links its Reasoning block to that page"
        )


def _erase_hint(places: _Places, executions: _Executions) -> None:
    """Erase an execution, then verify the journal against the collector's archive: the viewer's reads
    and the tombstone are kept in the journal (local records), and every chain is signed by the key."""
    erase = ("erase", "--execution", executions.gemini, "--tenant", "acme", "--store", f"file://{places.store}")
    verify = ("verify", str(places.journal), "--against", str(places.archive), "--key", str(places.key))
    print("\nErase an execution, then check that nothing captured was altered or lost:")
    print(f"  {_signed(places, *erase)}")
    print(f"  {command_line(*verify)}")
