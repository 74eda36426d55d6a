"""Runs one framework app (tests/frameworks/apps) in a subprocess of its own venv, bare or under
``opentelemetry-instrument``, against the strict simulator served over HTTP, and collects what the
matrix asserts: the answers, what the simulator answered (each call's reasoning and signatures), the
spans exported over OTLP to a real receiver, and the journal."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from loom_otel.audit._captures import CaptureRecord, iter_captures
from loom_otel.testing.simulator import Reply, Simulator, serve
from tests.e2e_trail.receiver import Receiver

from .forkserver import ForkServer

ROOT = Path(__file__).resolve().parents[2]
APPS = Path(__file__).resolve().parent / "apps"
CACHE = ROOT / ".ci" / ".cache"
TOOL_ROUNDS = 3
TIMEOUT = 240
WORKDIR: list[Path | None] = [None]
"""Where the instrumented runs keep their store, journal and export (set per session by conftest)."""


def venv(framework: str) -> Path:
    return CACHE / f"fw-{framework}"


@dataclass(frozen=True, slots=True)
class Case:
    framework: str  # langchain | pydantic-ai | adk | llamaindex | openai-agents | autogen | strands | crewai
    vendor: str  # anthropic | gemini | openai | bedrock
    variant: str  # tools | streamed | system-turn | system-call | execution | both | ...
    drop: bool = False  # Anthropic thinking.block_binding drop_block

    @property
    def id(self) -> str:
        return f"{self.framework}-{self.vendor}-{self.variant}{'-drop' if self.drop else ''}"


@dataclass(frozen=True, slots=True)
class Call:
    """One request the simulator answered: its status and the reasoning it returned."""

    status: int
    texts: tuple[str, ...]  # readable reasoning parts, as loom-otel counts them (Gemini: merged runs)
    signatures: tuple[str, ...]
    fresh: bool = False  # the request held no assistant (model) turn: it starts a conversation

    @property
    def digests(self) -> tuple[str, ...]:
        return tuple(hashlib.sha256(t.encode()).hexdigest() for t in self.texts if t)


@dataclass
class Run:
    ok: bool
    answers: list[str]
    error: str | None
    stderr: str
    calls: list[Call] = field(default_factory=list)
    captures: list[CaptureRecord] = field(default_factory=list)  # from the exported spans
    journal: list[CaptureRecord] = field(default_factory=list)
    exported: Path | None = None
    journal_dir: Path | None = None
    store: str | None = None
    held: str | None = None  # the history the app held at the end, where the app reports it

    def span_events(self, name: str) -> list[dict[str, object]]:
        """The attributes of every exported span event called ``name``."""
        found: list[dict[str, object]] = []
        if self.exported is None or not self.exported.is_file():
            return found
        for line in self.exported.read_text().splitlines():
            for resource in json.loads(line).get("resourceSpans", []):
                for scope in resource.get("scopeSpans", []):
                    for span in scope.get("spans", []):
                        for event in span.get("events", []):
                            if event.get("name") == name:
                                found.append({a["key"]: a.get("value") for a in event.get("attributes", [])})
        return found

    def secrets(self) -> list[str]:
        return [s for call in self.calls for s in (*call.texts, *call.signatures) if s]


class RecordingSimulator(Simulator):
    """The strict simulator, keeping each reply next to its request."""

    def __init__(self) -> None:
        super().__init__(strict=True, max_tool_rounds=TOOL_ROUNDS)
        self.replies: list[tuple[str, bytes, Reply]] = []
        self._replies_lock = threading.Lock()

    def handle(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str], content: bytes
    ) -> Reply:
        reply = super().handle(method, path, query, headers, content)
        with self._replies_lock:
            self.replies.append((path, content, reply))
        return reply


def _sse_payloads(reply: Reply) -> list[dict[str, Any]]:
    payloads = []
    for line in b"".join(reply.chunks).decode().splitlines():
        if line.startswith("data:"):
            data = line[5:].strip()
            if data and data != "[DONE]":
                payloads.append(json.loads(data))
    return payloads


def _anthropic_call(reply: Reply) -> Call:
    texts: list[str] = []
    signatures: list[str] = []
    if reply.stream:
        blocks: dict[int, dict[str, Any]] = {}
        for event in _sse_payloads(reply):
            if event.get("type") == "content_block_start":
                blocks[event["index"]] = dict(event["content_block"])
            elif event.get("type") == "content_block_delta":
                delta, block = event["delta"], blocks[event["index"]]
                if delta["type"] == "thinking_delta":
                    block["thinking"] = block.get("thinking", "") + delta["thinking"]
                elif delta["type"] == "signature_delta":
                    block["signature"] = delta["signature"]
        content = [blocks[i] for i in sorted(blocks)]
    else:
        content = json.loads(reply.body).get("content", []) if reply.status == 200 else []
    for block in content:
        if block.get("type") == "thinking":
            texts.append(block.get("thinking", ""))
            signatures.append(block.get("signature", ""))
        elif block.get("type") == "redacted_thinking":
            signatures.append(block.get("data", ""))
    return Call(reply.status, tuple(texts), tuple(signatures))


def _gemini_signatures(signature: str) -> list[str]:
    """The wire's standard base64 and the URL-safe spelling google-genai re-encodes it in."""
    raw = base64.b64decode(signature)
    return [signature, base64.urlsafe_b64encode(raw).decode()]


def _gemini_call(reply: Reply) -> Call:
    frames = _sse_payloads(reply) if reply.stream else [json.loads(reply.body)] if reply.status == 200 else []
    texts: list[str] = []
    signatures: list[str] = []
    thinking = False
    for frame in frames:
        for candidate in frame.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                if part.get("thoughtSignature"):
                    signatures.extend(_gemini_signatures(part["thoughtSignature"]))
                if part.get("thought"):
                    if thinking:
                        texts[-1] += part.get("text", "")
                    else:
                        texts.append(part.get("text", ""))
                    thinking = True
                else:
                    thinking = False
    return Call(reply.status, tuple(texts), tuple(signatures))


def _bedrock_call(reply: Reply) -> Call:
    """A Converse answer, or a ConverseStream one: each chunk is one AWS event-stream message (prelude of
    total and headers lengths and a CRC, the headers, the JSON payload, a CRC)."""
    if reply.status != 200:
        return Call(reply.status, (), ())
    blocks: dict[int, dict[str, Any]] = {}
    if reply.stream:
        for frame in reply.chunks:
            headers = int.from_bytes(frame[4:8], "big")
            event = json.loads(frame[12 + headers : -4])
            delta = event.get("delta", {}).get("reasoningContent")
            if delta is not None:
                block = blocks.setdefault(event["contentBlockIndex"], {"text": "", "signature": ""})
                block["text"] += delta.get("text", "")
                block["signature"] += delta.get("signature", "") + delta.get("redactedContent", "")
    else:
        for index, content in enumerate(json.loads(reply.body)["output"]["message"]["content"]):
            reasoning = content.get("reasoningContent")
            if reasoning is not None:
                text = reasoning.get("reasoningText", {})
                signature = text.get("signature", "") + reasoning.get("redactedContent", "")
                blocks[index] = {"text": text.get("text", ""), "signature": signature}
    found = [blocks[i] for i in sorted(blocks)]
    return Call(200, tuple(b["text"] for b in found if b["text"]), tuple(b["signature"] for b in found))


def _fresh(content: bytes) -> bool:
    try:
        body = json.loads(content)
    except ValueError:
        return False
    turns = (body.get("messages") or body.get("contents") or body.get("input") or []) if isinstance(body, dict) else []
    earlier = ("assistant", "model")  # a Responses input's model items carry no role, only their type
    return not any(
        isinstance(t, dict) and (t.get("role") in earlier or t.get("type") in ("reasoning", "function_call"))
        for t in (turns if isinstance(turns, list) else [])
    )


_SUMMARY_SEPARATOR = "\n\n"
"""How loom-otel joins a reasoning item's summary texts into its one part."""


def _openai_call(reply: Reply) -> Call:
    """Each reasoning item is one part: its content texts, else its summary texts joined; its secret is
    the ``encrypted_content``."""
    if reply.stream:
        done = [e["response"] for e in _sse_payloads(reply) if e.get("type") == "response.completed"]
        output = done[0].get("output", []) if done else []
    else:
        output = json.loads(reply.body).get("output", []) if reply.status == 200 else []
    texts: list[str] = []
    signatures: list[str] = []
    for item in output:
        if item.get("type") == "reasoning":
            pieces = item.get("content") or item.get("summary") or []
            texts.append(_SUMMARY_SEPARATOR.join(p.get("text", "") for p in pieces))
            signatures.append(item.get("encrypted_content") or "")
    return Call(reply.status, tuple(texts), tuple(signatures))


def _chat_call(reply: Reply) -> Call:
    """Chat Completions (an OpenAI-compatible reasoning endpoint): the message's ``reasoning_content`` is
    one part; nothing is signed."""
    if reply.stream:
        deltas = [c["delta"] for f in _sse_payloads(reply) for c in f.get("choices", [])]
        text = "".join(d.get("reasoning_content") or "" for d in deltas)
    else:
        choices = json.loads(reply.body).get("choices", []) if reply.status == 200 else []
        text = "".join(c["message"].get("reasoning_content") or "" for c in choices)
    return Call(reply.status, (text,) if text else (), ())


def _call(path: str, reply: Reply) -> Call:
    if path.startswith("/v1/messages"):
        return _anthropic_call(reply)
    if path.startswith("/v1/responses"):
        return _openai_call(reply)
    if path.startswith("/v1/chat/completions"):
        return _chat_call(reply)
    if path.startswith("/model/"):
        return _bedrock_call(reply)
    return _gemini_call(reply)


def _calls(sim: RecordingSimulator) -> list[Call]:
    """One per model call: a request sent again as it was right after itself (the SDK retrying after the
    server closed a kept-alive connection) is the same call, answered alike by the deterministic
    simulator; the same request later on is a new call (CrewAI reruns a failed task from its start)."""
    calls = []
    last: tuple[str, bytes] | None = None
    for path, content, reply in sim.replies:
        if (path, content) == last:
            continue
        last = (path, content)
        calls.append(replace(_call(path, reply), fresh=_fresh(content)))
    return calls


def _environment(case: Case, base_url: str) -> dict[str, str]:
    return _common_environment() | dict(
        FW_VENDOR=case.vendor,
        FW_VARIANT=case.variant,
        FW_DROP="1" if case.drop else "0",
        FW_BASE_URL=base_url,
        ANTHROPIC_BASE_URL=base_url,  # where an app builds its client from the environment (google-adk)
        # boto3 as an app that builds its client from the environment finds it (Strands' default Bedrock
        # model): the simulator's Converse side
        AWS_ENDPOINT_URL_BEDROCK_RUNTIME=base_url,
    )


def _common_environment() -> dict[str, str]:
    """What every run of every app has in its environment (the fork servers' own as well)."""
    prefixes = ("OTEL_", "LOOM_OTEL_", "ANTHROPIC_", "GOOGLE_", "OPENAI_", "AWS_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update(
        ANTHROPIC_API_KEY="sim",
        GOOGLE_API_KEY="sim",
        OPENAI_API_KEY="sim",
        # the OpenAI Agents SDK's own trace export goes to api.openai.com, outside OpenTelemetry (the
        # warning at instrument() names it): turned off where it is deployed, as a user keeping traces in
        # their own backend does, never in the script
        OPENAI_AGENTS_DISABLE_TRACING="true",
        # boto3's dummy credentials (botocore signs with any), no metadata
        AWS_ACCESS_KEY_ID="sim",
        AWS_SECRET_ACCESS_KEY="sim",
        AWS_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        # CrewAI's anonymous telemetry and trace upload to its vendor (no network here; an app that keeps
        # them on sends what loom-otel cannot reach: README "Agent frameworks tested")
        CREWAI_DISABLE_TELEMETRY="true",
        CREWAI_TRACING_ENABLED="false",
        # the apps, then this checkout's loom-otel before the one the venv was installed from (a git
        # worktree or a copy runs its own code, never a mix of two)
        PYTHONPATH=os.pathsep.join(str(p) for p in (APPS, ROOT, ROOT / "instrumentation", ROOT / "exporters")),
        PYTHONUNBUFFERED="1",
    )
    return env


def _script(framework: str) -> Path:
    return APPS / f"{framework.replace('-', '_')}_agent.py"


_FORK_SERVERS: dict[str, ForkServer] = {}
_FORK_SERVERS_LOCK = threading.Lock()


def _fork_server(framework: str) -> ForkServer:
    with _FORK_SERVERS_LOCK:
        if framework not in _FORK_SERVERS:
            assert WORKDIR[0] is not None
            _FORK_SERVERS[framework] = ForkServer(
                venv(framework) / "bin" / "python",
                _script(framework),
                _common_environment(),
                WORKDIR[0] / "forkservers" / framework,
            )
        return _FORK_SERVERS[framework]


def close_fork_servers() -> None:
    with _FORK_SERVERS_LOCK:
        while _FORK_SERVERS:
            _FORK_SERVERS.popitem()[1].close()


def _outcome(completed: subprocess.CompletedProcess[str]) -> tuple[bool, list[str], str | None, str | None]:
    lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return False, [], f"no result line (exit {completed.returncode}): {completed.stderr[-3000:]}", None
    result = json.loads(lines[-1])
    ok = completed.returncode == 0 and "error" not in result
    return ok, list(result.get("answers", [])), result.get("error"), result.get("held")


@cache
def bare(case: Case) -> Run:
    """The app alone: no loom-otel, no OpenTelemetry (the same venv, ``python app.py``, forked from a
    process that imported the app's libraries once: tests/frameworks/forkserver.py)."""
    sim = RecordingSimulator()
    with serve(sim) as server:
        completed = _fork_server(case.framework).run(_environment(case, server.url), TIMEOUT)
    ok, answers, error, held = _outcome(completed)
    return Run(ok, answers, error, completed.stderr, calls=_calls(sim), held=held)


@cache
def instrumented(case: Case, mode: str) -> Run:
    """The app under ``opentelemetry-instrument`` with a file store, the journal and the chained
    exporter forwarding over OTLP/gRPC to a real receiver; ``mode`` is the transcript mode."""
    workdir = Path(tempfile.mkdtemp(prefix=f"{case.id}-{mode}-", dir=WORKDIR[0]))
    sim = RecordingSimulator()
    receiver = Receiver(workdir / "exported.jsonl").start()
    journal = workdir / "journal"
    store = (workdir / "store").as_uri()
    try:
        with serve(sim) as server:
            env = _environment(case, server.url)
            env.update(
                OTEL_SERVICE_NAME=f"fw-{case.framework}",
                OTEL_TRACES_EXPORTER="loom_chain",
                LOOM_OTEL_CHAIN_INNER="otlp_proto_grpc",
                OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"http://{receiver.endpoint}",
                OTEL_EXPORTER_OTLP_INSECURE="true",
                OTEL_METRICS_EXPORTER="none",
                OTEL_LOGS_EXPORTER="none",
                LOOM_OTEL_REASONING_STORE=store,
                LOOM_OTEL_AUDIT_JOURNAL=str(journal),
                LOOM_OTEL_REASONING_TRANSCRIPT=mode,
            )
            bin_dir = venv(case.framework) / "bin"
            completed = subprocess.run(
                [str(bin_dir / "opentelemetry-instrument"), str(bin_dir / "python"), str(_script(case.framework))],
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
            )
    finally:
        receiver.stop()
    ok, answers, error, held = _outcome(completed)
    exported = workdir / "exported.jsonl"
    captures = list(iter_captures(exported)) if exported.is_file() else []
    records = list(iter_captures(journal)) if journal.is_dir() else []
    return Run(ok, answers, error, completed.stderr, _calls(sim), captures, records, exported, journal, store, held)
