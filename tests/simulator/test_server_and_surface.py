"""The HTTP server (real sockets, chunked streaming), the ``simulate`` CLI and the public surface."""

from __future__ import annotations

import argparse
import io
import json
import socket
import threading
from typing import Any

import httpx2
import pytest

from loom_otel.testing import simulator
from loom_otel.testing.simulator import Simulator, serve


def test_public_surface() -> None:
    assert simulator.__all__ == sorted(simulator.__all__)
    assert set(simulator.__all__) == {"RecordedRequest", "Reply", "Simulator", "SimulatorServer", "serve"}


def test_simulator_imports_nothing_else_from_loom_otel() -> None:
    from pathlib import Path

    package = Path(simulator.__file__).parent
    for module in package.glob("*.py"):
        source = module.read_text()
        assert "from loom_otel" not in source and "import loom_otel" not in source, module.name


def test_one_transport_serves_sync_and_async_clients(sim: Simulator) -> None:
    transport = sim.transport()
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with httpx2.Client(transport=transport, base_url="https://x") as client:
        assert client.post("/v1/chat/completions", json=body).status_code == 200

    async def run() -> int:
        async with httpx2.AsyncClient(transport=transport, base_url="https://x") as client:
            return (await client.post("/v1/chat/completions", json=body)).status_code

    import asyncio

    assert asyncio.run(run()) == 200
    recorded = sim.requests
    assert len(recorded) == 2
    assert recorded[0].method == "POST"
    assert recorded[0].body == body
    assert recorded[0].header("Content-Type") == "application/json"


def test_unknown_route_is_404(sim: Simulator) -> None:
    with httpx2.Client(transport=sim.transport(), base_url="https://x") as client:
        assert client.post("/v2/unknown", json={}).status_code == 404
        assert client.get("/v1/messages").status_code == 404


def test_server_streams_chunked_and_binds_loopback(server: Any) -> None:
    assert server.url == f"http://127.0.0.1:{server.port}"
    body = {"model": "m", "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx2.Client(base_url=server.url) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        with client.stream("POST", "/v1/messages", json=body) as response:
            assert response.headers["transfer-encoding"] == "chunked"
            assert response.headers["content-type"] == "text/event-stream"
            chunks = list(response.iter_raw())
    assert b"event: message_stop" in b"".join(chunks)
    with pytest.raises(ValueError, match=r"127\.0\.0\.1"):
        serve(Simulator(), host="0.0.0.0")


def test_server_abort_cuts_the_connection(server: Any) -> None:
    server.simulator.break_stream_after(2)
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    client = httpx2.Client(base_url=server.url)
    with (
        client,
        pytest.raises(httpx2.TransportError),
        client.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        list(response.iter_bytes())


def test_server_close_is_idempotent_and_frees_the_port() -> None:
    server = serve(Simulator())
    port = server.port
    server.close()
    server.close()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


def test_cli_simulate_registers_and_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    from loom_otel.cli import _simulate
    from loom_otel.testing.simulator._server import SimulatorServer

    parser = argparse.ArgumentParser(prog="loom-otel")
    _simulate.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["simulate", "--port", "0", "--no-strict"])
    assert (args.command, args.port, args.host, args.strict) == ("simulate", 0, "127.0.0.1", False)
    assert parser.parse_args(["simulate"]).strict is True

    seen: dict[str, Any] = {}

    def fake_wait(self: SimulatorServer) -> None:
        seen["strict"] = self.simulator.strict
        with httpx2.Client(base_url=self.url) as client:
            seen["status"] = client.post("/v1/responses", json={"model": "m", "input": "hi"}).status_code
        raise KeyboardInterrupt

    monkeypatch.setattr(SimulatorServer, "wait", fake_wait)
    out = io.StringIO()
    assert args.func(args, out=out) == 0
    text = out.getvalue()
    assert "export ANTHROPIC_BASE_URL=http://127.0.0.1:" in text
    assert "export OPENAI_BASE_URL=http://127.0.0.1:" in text
    assert "GOOGLE_GEMINI_BASE_URL" in text
    assert seen == {"strict": False, "status": 200}


def test_cli_simulate_takes_the_simulator_scenario_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user trying an agent against ``loom-otel simulate`` can ask for several tool rounds, interleaved
    and redacted thinking, its own reasoning text: served over HTTP to the real anthropic SDK."""
    import anthropic

    from loom_otel.cli.__main__ import build_parser
    from loom_otel.testing.simulator._script import Script
    from loom_otel.testing.simulator._server import SimulatorServer

    argv = ["simulate", "--tool-rounds", "2", "--interleaved", "--redacted", "--reasoning-text", "Mull it over."]
    argv += ["--thinking-size", "400", "--stream-chunks", "3", "--reasoning-field", "reasoning", "--no-strict"]
    args = build_parser().parse_args(argv)
    tools = [
        {"name": name, "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
        for name in ("get_weather", "get_time")
    ]
    turns: list[list[str]] = []

    def agent(self: SimulatorServer) -> None:
        assert self.simulator.script == Script(
            strict=False,
            reasoning_text="Mull it over.",
            thinking_size=400,
            stream_chunks=3,
            max_tool_rounds=2,
            redacted=True,
            interleaved=True,
            reasoning_field="reasoning",
        )
        client = anthropic.Anthropic(api_key="sim", base_url=self.url, max_retries=0)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Umbrella in Lyon?"}]
        for _ in range(4):
            reply = client.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=2048,
                tools=tools,
                thinking={"type": "enabled", "budget_tokens": 1024},
                messages=messages,
            )
            turns.append([b.type for b in reply.content])
            thinking = next(b for b in reply.content if b.type == "thinking")
            assert thinking.thinking.startswith("Mull it over.") and len(thinking.thinking) == 400
            if reply.stop_reason != "tool_use":
                break
            messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
            results = [
                {"type": "tool_result", "tool_use_id": b.id, "content": "rain"}
                for b in reply.content
                if b.type == "tool_use"
            ]
            messages.append({"role": "user", "content": results})
        raise KeyboardInterrupt

    monkeypatch.setattr(SimulatorServer, "wait", agent)
    out = io.StringIO()
    assert args.func(args, out=out) == 0
    assert (
        "Scenario: non-strict, 2 tool round(s) per turn, 3 reasoning deltas per stream, interleaved" in out.getvalue()
    )
    interleaved_round = ["thinking", "text", "tool_use", "thinking", "tool_use"]
    assert turns == [interleaved_round, interleaved_round, ["thinking", "redacted_thinking", "text"]]


def test_concurrent_requests_over_http(server: Any) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    statuses: list[int] = []

    def worker() -> None:
        with httpx2.Client(base_url=server.url) as client:
            for _ in range(5):
                statuses.append(client.post("/v1/chat/completions", content=body).status_code)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 20
    assert len(server.simulator.requests) == 20


def test_a_client_gone_mid_answer_prints_nothing_but_other_errors_are_reported(
    server: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    for gone in (BrokenPipeError(), ConnectionResetError(), ConnectionAbortedError()):
        try:
            raise gone
        except ConnectionError:
            server._httpd.handle_error(None, ("127.0.0.1", 1))
    assert capfd.readouterr().err == ""
    try:
        raise RuntimeError("a fault of the simulator's")
    except RuntimeError:
        server._httpd.handle_error(None, ("127.0.0.1", 1))
    err = capfd.readouterr().err
    assert "Exception occurred during processing of request" in err
    assert "a fault of the simulator's" in err
    with httpx2.Client(base_url=server.url) as client:  # still serving
        assert client.get("/healthz").json() == {"status": "ok"}
