"""The live view over real HTTP: uvicorn on 127.0.0.1, the Anthropic SDK against the simulator."""

from __future__ import annotations

import httpx2
import pytest

from loom_otel.core import LoomOtelWarning, ReasoningConfig, execution, step
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import LiveReasoningHub, flush_live
from loom_otel.live.asgi import create_app
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator
from tests.live.modes import ANTHROPIC, anthropic_request
from tests.live.sse import SseReader
from tests.live.viewers import ALICE, ALICE_GLOBEX, ALICE_NO_TENANT, MALLORY, OLGA, authenticator

THINKING = "Rain is likely in Lyon tomorrow afternoon, so an umbrella is a good idea overall."


@pytest.fixture
def sim() -> Simulator:
    return Simulator(reasoning_text=THINKING, stream_chunks=10)


@pytest.fixture
def app(hub: LiveReasoningHub, store, journal_dir):
    return create_app(hub, store=store, source=journal_dir, authenticator=authenticator(), keepalive=0.5)


@pytest.fixture
def config(store, journal_dir, hub) -> ReasoningConfig:
    return ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=hub)


def _scope():
    return execution("live-42", tenant="acme", principal="alice", owner="olga")


def _url(server, execution_id: str = "live-42", suffix: str = "") -> str:
    return f"{server.url}/executions/{execution_id}/reasoning{suffix}"


def test_attach_mid_stream_gets_the_partial_then_the_deltas(sim, config, app, serve):
    server = serve(app)
    with instrumented(AnthropicInstrumentor(), config=config), _scope(), step("plan"):
        with sim.anthropic_client().messages.create(stream=True, **anthropic_request()) as stream:
            events = iter(stream)
            seen: list[str] = []
            while len(seen) < 4:
                event = next(events)
                if event.type == "content_block_delta" and event.delta.type == "thinking_delta":
                    seen.append(event.delta.thinking)
            assert flush_live()
            with SseReader(_url(server), ALICE) as reader:
                assert reader.status == 200
                name, partial = reader.get()
                assert name == "reasoning-partial" and partial["source"] == "live"
                assert partial["blocks"] == [{"block": 0, "text": "".join(seen)}]
                assert (partial["execution"], partial["step"], partial["provider"]) == ("live-42", "plan", "anthropic")
                assert partial["origin"] == "llm-reasoning:plan" and partial["truncated"] is False
                rest = list(events)
                assert rest[-1].type == "message_stop"
                after = reader.until("done")
    deltas = [data for name, data in after if name == "reasoning"]
    assert [d["seq"] for d in deltas] == list(range(5, 11))
    assert partial["blocks"][0]["text"] + "".join(d["text"] for d in deltas) == THINKING
    name, done = after[-1]
    assert done["outcome"] == "completed" and done["kept"] is True and done["attempt"] == 1


@pytest.mark.parametrize("mode", list(ANTHROPIC))
def test_reconnect_after_completion_gets_the_durable_record(mode, sim, config, app, serve):
    server = serve(app)
    with instrumented(AnthropicInstrumentor(), config=config), _scope(), step("plan"):
        ANTHROPIC[mode](sim, anthropic_request())
    assert flush_live()
    for viewer in (ALICE, OLGA):  # the asker and the owner
        with SseReader(_url(server), viewer) as reader:
            (name, record), (done_name, done) = reader.until("done")
        assert name == "reasoning-partial" and record["source"] == "record" and record["truncated"] is False
        (part,) = record["parts"]
        assert part["status"] == "ok" and part["text"] == THINKING and part["origin"] == "llm-reasoning:plan"
        assert done_name == "done" and done["kept"] is True

    response = httpx2.get(_url(server, suffix="/record?step=plan"), headers=ALICE)
    assert response.status_code == 200
    body = response.json()
    assert body["truncated"] is False and [p["text"] for p in body["parts"]] == [THINKING]


def test_a_complete_response_is_served_from_the_record(sim, config, app, serve):
    server = serve(app)
    with instrumented(AnthropicInstrumentor(), config=config), _scope(), step("answer"):
        sim.anthropic_client().messages.create(**anthropic_request())
    assert flush_live()
    with SseReader(_url(server), ALICE) as reader:
        (name, record), (_, done) = reader.until("done")
    assert name == "reasoning-partial" and record["parts"][0]["text"] == THINKING and done["step"] == "answer"


def test_without_a_store_the_viewer_is_told_none_was_kept(sim, hub, journal_dir, serve):
    config = ReasoningConfig(journal=journal_dir, live=True, on_reasoning=hub)
    server = serve(create_app(hub, authenticator=authenticator(), keepalive=0.5))
    with (
        pytest.warns(LoomOtelWarning, match="no reasoning store"),
        instrumented(AnthropicInstrumentor(), config=config),
        _scope(),
        step("plan"),
    ):
        ANTHROPIC["messages.stream()"](sim, anthropic_request())
    assert flush_live()
    with SseReader(_url(server), ALICE) as reader:
        ((name, done),) = reader.until("done")
    assert name == "done" and done["kept"] is False
    body = httpx2.get(_url(server, suffix="/record?step=plan"), headers=ALICE).json()
    assert body["kept"] is False and body["parts"] == []


def test_a_rerun_resets_the_viewer(sim, config, app, serve):
    server = serve(app)
    with instrumented(AnthropicInstrumentor(), config=config), _scope(), step("plan"):
        ANTHROPIC["messages.stream()"](sim, anthropic_request())
        assert flush_live()
        with SseReader(_url(server), ALICE) as reader:
            first = reader.until("done")
            ANTHROPIC["create(stream=True)"](sim, anthropic_request())
            again = reader.until("done")
    assert again[0] == ("reset", {"execution": "live-42", "step": "plan"})
    assert "".join(d["text"] for n, d in again if n == "reasoning") == THINKING
    assert again[-1][1]["attempt"] == first[-1][1]["attempt"] + 1


def test_everyone_else_gets_the_same_404(sim, config, app, serve):
    server = serve(app)
    with instrumented(AnthropicInstrumentor(), config=config), _scope(), step("plan"):
        ANTHROPIC["messages.stream()"](sim, anthropic_request())
    assert flush_live()
    cases = [
        (_url(server), MALLORY),  # not the audience
        (_url(server), ALICE_GLOBEX),  # another tenant
        (_url(server), ALICE_NO_TENANT),  # no tenant
        (_url(server), {}),  # unauthenticated
        (_url(server), {"Authorization": "Bearer not-a-token-of-anyone"}),  # unknown credential
        (_url(server), {"X-Loom-Principal": "alice", "X-Loom-Tenant": "acme"}),  # a claimed identity
        (_url(server, "run-404"), ALICE),  # unknown execution
        (_url(server, suffix="/record?step=plan"), MALLORY),
        (_url(server, suffix="/record?step=plan"), ALICE_GLOBEX),
        (_url(server, suffix="/record?step=plan"), {"X-Loom-Principal": "olga", "X-Loom-Tenant": "acme"}),
        (_url(server, suffix="/record?step=nope"), ALICE),  # unknown step
        (_url(server, "run-404", "/record?step=plan"), ALICE),
        (_url(server, "run-404", "/record"), ALICE),
    ]
    answers = set()
    for url, headers in cases:
        response = httpx2.get(url, headers=headers)
        assert response.status_code == 404, url
        answers.add((response.status_code, response.headers["content-type"], response.content))
    assert len(answers) == 1
    assert httpx2.get(_url(server, suffix="/record"), headers=OLGA).status_code == 200


def test_an_execution_id_with_a_slash_is_served(sim, config, app, serve):
    from urllib.parse import quote

    server = serve(app)
    with instrumented(AnthropicInstrumentor(), config=config):
        with execution("team/live 7", tenant="acme", principal="alice"), step("answer"):
            sim.anthropic_client().messages.create(**anthropic_request())
    assert flush_live()
    encoded = quote("team/live 7", safe="")  # as the viewer's page asks (encodeURIComponent)
    with SseReader(_url(server, encoded), ALICE) as reader:
        (name, record), (_, done) = reader.until("done")
    assert name == "reasoning-partial" and record["parts"][0]["text"] == THINKING and done["step"] == "answer"
    response = httpx2.get(_url(server, encoded, "/record?step=answer"), headers=ALICE)
    assert response.status_code == 200 and [p["text"] for p in response.json()["parts"]] == [THINKING]
