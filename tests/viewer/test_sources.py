"""The viewer reads a collector ``file`` archive as it reads a journal, and, embedded with a live hub,
streams the parts of calls in flight (the live view's SSE under ``/live``, same reader, same rule)."""

from __future__ import annotations

import httpx2

from loom_otel.core import FileReasoningStore, ReasoningConfig, execution, step
from loom_otel.core._reading._policy import load_policy
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import LiveReasoningHub, flush_live
from loom_otel.testing import OtlpJsonFileExporter, instrumented
from loom_otel.testing.simulator import Simulator
from loom_otel.viewer import create_app, tokens_file_authenticator
from tests.live.conftest import Server
from tests.live.modes import anthropic_request
from tests.live.sse import SseReader
from tests.viewer.conftest import CANARY, Captured, bearer


def test_a_collector_archive_is_served_like_the_journal(captured: Captured, tmp_path):
    archive = tmp_path / "collector" / "traces.jsonl"
    archive.parent.mkdir()
    OtlpJsonFileExporter(archive).export(list(captured.spans))
    app = create_app(
        archive,
        FileReasoningStore(captured.root / "store"),
        authenticator=tokens_file_authenticator(captured.tokens),
        reads_journal=tmp_path / "reads",
        policy=load_policy(captured.policy),
    )
    with Server(app) as server:
        alice = httpx2.get(f"{server.url}/api/executions/run-alice?tenant=acme", headers=bearer("alice"), timeout=30)
        assert alice.status_code == 200
        (part,) = alice.json()["steps"][0]["attempts"][0]["parts"]
        assert CANARY in part["text"]
        listed = httpx2.get(f"{server.url}/api/executions", headers=bearer("ada"), timeout=30).json()
        assert {r["execution_id"] for r in listed} == {"run-alice", "run-bob", "run-nobody"}
        assert (
            httpx2.get(f"{server.url}/api/executions/run-alice?tenant=acme", headers=bearer("bob")).status_code == 404
        )


THINKING = "Streaming thoughts about the viewer, one delta at a time, until the call ends here."


def test_calls_in_flight_stream_into_the_viewer(captured: Captured, tmp_path):
    hub = LiveReasoningHub(policy=load_policy(captured.policy))
    store = FileReasoningStore(captured.root / "store")
    config = ReasoningConfig(store=store, journal=captured.journal, live=True, on_reasoning=hub)
    app = create_app(
        captured.journal,
        store,
        authenticator=tokens_file_authenticator(captured.tokens),
        reads_journal=tmp_path / "reads",
        policy=load_policy(captured.policy),
        hub=hub,
    )
    sim = Simulator(reasoning_text=THINKING, stream_chunks=10)
    with Server(app) as server, instrumented(AnthropicInstrumentor(), config=config):
        page = httpx2.get(f"{server.url}/executions/run-alice?tenant=acme", headers=bearer("alice"), timeout=30)
        assert 'id="live"' in page.text and '<script src="/static/live.js" defer>' in page.text
        script = httpx2.get(f"{server.url}/static/live.js", timeout=30)
        assert "textContent" in script.text and "innerHTML" not in script.text
        with execution("run-alice", tenant="acme", principal="alice"), step("live"):
            with sim.anthropic_client().messages.create(stream=True, **anthropic_request()) as stream:
                events = iter(stream)
                seen: list[str] = []
                while len(seen) < 3:
                    event = next(events)
                    if event.type == "content_block_delta" and event.delta.type == "thinking_delta":
                        seen.append(event.delta.thinking)
                assert flush_live()
                url = f"{server.url}/live/executions/run-alice/reasoning?tenant=acme"
                for outsider in ("bob", "mallory"):
                    assert httpx2.get(url, headers=bearer(outsider), timeout=10).status_code == 404
                assert httpx2.get(url, timeout=10).status_code == 404
                for reader in ("alice", "ada"):  # the asker, and the tenant's auditor by the same rule
                    with SseReader(url, bearer(reader)) as sse:
                        assert sse.status == 200
                        name, partial = sse.get()
                        assert name == "reasoning-partial" and partial["blocks"][0]["text"] == "".join(seen)
                list(events)
