"""Who may read what over HTTP: a reader gets the captures it was admitted to, never another
principal's attempt that shares a step name (DESIGN "Live view and who may read")."""

from __future__ import annotations

import httpx2
import pytest
from starlette.requests import HTTPConnection

from loom_otel.core import ReasoningConfig, execution, step
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import LiveReasoningHub, Viewer, flush_live
from loom_otel.live.asgi import create_app
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.live.modes import ANTHROPIC, anthropic_request
from tests.live.sse import SseReader

CANARY_A = "CANARY-alice-plan-5d1f0e"
CANARY_B = "CANARY-bob-plan-a93c27"
VIEWERS = {
    "token-alice": Viewer("alice", "acme"),
    "token-bob": Viewer("bob", "acme"),
    "token-olga": Viewer("olga", "acme"),
}


def _by_token(connection: HTTPConnection) -> Viewer | None:
    """A stand-in for the deployment's authenticator: an opaque credential names the viewer."""
    return VIEWERS.get(connection.headers.get("authorization", ""))


def _as(name: str) -> dict[str, str]:
    return {"Authorization": f"token-{name}"}


@pytest.fixture
def app(hub: LiveReasoningHub, store, journal_dir):
    return create_app(hub, store=store, source=journal_dir, authenticator=_by_token, keepalive=0.5)


@pytest.fixture
def config(store, journal_dir, hub) -> ReasoningConfig:
    return ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=hub)


def _ask(principal: str, canary: str, *, streamed: bool = True) -> None:
    sim = Simulator(reasoning_text=f"Thinking for {principal}: {canary}. Done.", stream_chunks=3)
    with execution("shared-1", tenant="acme", principal=principal, owner="olga"), step("plan"):
        if streamed:
            ANTHROPIC["messages.stream()"](sim, anthropic_request())
        else:  # a complete response: only its end and its record reach the hub
            sim.anthropic_client().messages.create(**anthropic_request())


def _record(server, who: str, suffix: str = "?step=plan") -> httpx2.Response:
    return httpx2.get(f"{server.url}/executions/shared-1/reasoning/record{suffix}", headers=_as(who))


def _replayed(server, who: str) -> str:
    """Everything the SSE catch-up sends ``who`` (raw), up to the last replayed end."""
    with SseReader(f"{server.url}/executions/shared-1/reasoning", _as(who)) as reader:
        assert reader.status == 200
        events = reader.until("done")
        while True:  # one replayed end per call this viewer may see
            try:
                events += reader.until("done", timeout=1.0)
            except Exception:
                break
    return repr(events)


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "complete"])
def test_a_step_named_like_anothers_serves_each_reader_its_own_captures(streamed, config, app, serve, caplog):
    server = serve(app)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        _ask("alice", CANARY_A, streamed=streamed)
        _ask("bob", CANARY_B, streamed=streamed)
    assert flush_live()

    for who, mine, theirs in (("bob", CANARY_B, CANARY_A), ("alice", CANARY_A, CANARY_B)):
        for suffix in ("?step=plan", ""):
            response = _record(server, who, suffix)
            assert response.status_code == 200, (who, suffix)
            texts = [p["text"] for p in response.json()["parts"]]
            assert len(texts) == 1 and mine in texts[0], (who, suffix)  # each still gets its own ...
            assert theirs not in response.text, (who, suffix)  # ... and never the other's
        replayed = _replayed(server, who)
        assert mine in replayed and theirs not in replayed, who

    owner = _record(server, "olga").json()  # the owner reads both
    assert [CANARY_A in p["text"] for p in owner["parts"]] == [True, False]
    assert [CANARY_B in p["text"] for p in owner["parts"]] == [False, True]
    assert find_leaks([CANARY_A, CANARY_B], spans=telemetry.spans, texts=[caplog.text]) == []


def test_a_later_attempt_of_the_same_reader_is_read_with_the_earlier_one(config, app, serve):
    server = serve(app)
    with instrumented(AnthropicInstrumentor(), config=config):
        _ask("alice", CANARY_A)
        _ask("bob", CANARY_B)
        _ask("alice", CANARY_A + "-again")
    assert flush_live()
    body = _record(server, "alice").json()
    first, again = (p["attempt"] for p in body["parts"])  # the step's attempts count in this process
    assert [p["text"].endswith(f"{CANARY_A}. Done.") for p in body["parts"]] == [True, False]
    assert [p["received"] for p in body["parts"]] == [False, True]  # her newest is the one she received
    assert CANARY_B not in repr(body)
    bob = _record(server, "bob").json()
    assert [p["attempt"] for p in bob["parts"]] == [first + 1] and again == first + 2
    assert bob["parts"][0]["received"] is True  # alice's later attempt does not supersede bob's
    assert CANARY_A not in repr(bob)
