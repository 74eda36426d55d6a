"""The live view trusts no identity a client can set: an authenticator is required, header identity
only when the deployment declares a trusted proxy (warned), and ``tail`` proves, never claims."""

from __future__ import annotations

import io
import warnings

import httpx2
import pytest

from loom_otel.cli.__main__ import build_parser
from loom_otel.cli._tail import run
from loom_otel.core import LoomOtelWarning, ReasoningConfig, ReasoningConfigError, execution, step
from loom_otel.core import environment_variables as env
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import LiveReasoningHub, Viewer, flush_live
from loom_otel.live.asgi import bearer_authenticator, create_app
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.live.modes import anthropic_request
from tests.live.viewers import ALICE, TOKENS, authenticator

CANARY = "CANARY-who-may-read-0c6d92"


@pytest.fixture
def captured(hub: LiveReasoningHub, store, journal_dir, caplog) -> LiveReasoningHub:
    """One call of alice's (owner olga) whose reasoning carries the canary, ended and kept."""
    config = ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=hub)
    sim = Simulator(reasoning_text=f"Thinking: {CANARY}. Done.", stream_chunks=2)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with execution("auth-1", tenant="acme", principal="alice", owner="olga"), step("plan"):
            with sim.anthropic_client().messages.stream(**anthropic_request()) as stream:
                stream.until_done()
    assert flush_live()
    yield hub
    assert find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir], texts=[caplog.text]) == []


def _record(server, headers: dict[str, str]) -> httpx2.Response:
    return httpx2.get(f"{server.url}/executions/auth-1/reasoning/record?step=plan", headers=headers)


def test_an_app_without_an_authenticator_is_refused(hub, store, journal_dir):
    with pytest.raises(
        ReasoningConfigError, match=f"authenticator=.*trusted_proxy=True.*{env.LOOM_OTEL_LIVE_TRUSTED_PROXY}"
    ):
        create_app(hub, store=store, source=journal_dir)
    with pytest.raises(ReasoningConfigError, match="not both"):
        create_app(hub, authenticator=authenticator(), trusted_proxy=True)
    with pytest.raises(ReasoningConfigError):
        create_app(hub, trusted_proxy=False)


def test_claimed_headers_prove_nothing_to_an_app_with_an_authenticator(captured, store, journal_dir, serve):
    server = serve(create_app(captured, store=store, source=journal_dir, authenticator=authenticator()))
    for claimed in ({"X-Loom-Principal": "olga", "X-Loom-Tenant": "acme"}, {"X-Loom-Principal": "alice"}):
        response = _record(server, claimed)
        assert response.status_code == 404 and CANARY not in response.text
    mine = _record(server, ALICE)
    assert mine.status_code == 200 and CANARY in mine.json()["parts"][0]["text"]


@pytest.mark.parametrize("declared", ["argument", "environment"])
def test_header_identity_only_behind_a_declared_trusted_proxy(
    declared, captured, store, journal_dir, serve, monkeypatch
):
    kwargs: dict[str, object] = {"store": store, "source": journal_dir}
    if declared == "argument":
        kwargs["trusted_proxy"] = True
    else:
        monkeypatch.setenv(env.LOOM_OTEL_LIVE_TRUSTED_PROXY, "true")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app = create_app(captured, **kwargs)
    told = [w for w in caught if issubclass(w.category, LoomOtelWarning)]
    assert len(told) == 1 and "X-Loom-Principal" in str(told[0].message) and "proxy" in str(told[0].message)
    server = serve(app)
    with warnings.catch_warnings(record=True) as later:
        warnings.simplefilter("always")
        owner = _record(server, {"X-Loom-Principal": "olga", "X-Loom-Tenant": "acme"})
        stranger = _record(server, {"X-Loom-Principal": "mallory", "X-Loom-Tenant": "acme"})
    assert owner.status_code == 200 and CANARY in owner.json()["parts"][0]["text"]
    assert stranger.status_code == 404 and CANARY not in stranger.text
    assert not [w for w in later if issubclass(w.category, LoomOtelWarning)]  # once, at startup


def test_the_environment_can_only_add_the_declaration(hub, monkeypatch):
    monkeypatch.setenv(env.LOOM_OTEL_LIVE_TRUSTED_PROXY, "false")
    with pytest.raises(ReasoningConfigError):
        create_app(hub)
    monkeypatch.setenv(env.LOOM_OTEL_LIVE_TRUSTED_PROXY, "perhaps")
    with pytest.raises(ReasoningConfigError, match=f"{env.LOOM_OTEL_LIVE_TRUSTED_PROXY}='perhaps'"):
        create_app(hub)
    monkeypatch.setenv(env.LOOM_OTEL_LIVE_TRUSTED_PROXY, "true")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        create_app(hub, authenticator=authenticator())  # an authenticator wins: no header identity, no warning


def test_bearer_tokens():
    with pytest.raises(ReasoningConfigError, match="shorter than 16"):
        bearer_authenticator({"short": Viewer("alice")})
    with pytest.raises(ReasoningConfigError, match="Viewer with a principal"):
        bearer_authenticator({"long-enough-token-0001": Viewer("")})


def _tail(server, *extra: str) -> tuple[int, str]:
    argv = ["tail", "--execution", "auth-1", "--url", server.url, "--until-done", "--timeout", "10", *extra]
    out = io.StringIO()
    return run(build_parser().parse_args(argv), out), out.getvalue()


def test_tail_proves_with_a_token_and_cannot_claim_a_principal(captured, store, journal_dir, serve, monkeypatch):
    server = serve(create_app(captured, store=store, source=journal_dir, authenticator=authenticator()))
    with pytest.raises(SystemExit):
        build_parser().parse_args(["tail", "--execution", "auth-1", "--principal", "olga"])
    olga = next(token for token, viewer in TOKENS.items() if viewer == Viewer("olga", "acme"))
    code, printed = _tail(server, "--token", olga)
    assert code == 0 and CANARY in printed
    monkeypatch.setenv(env.LOOM_OTEL_LIVE_TOKEN, olga)
    code, printed = _tail(server)
    assert code == 0 and CANARY in printed
    code, printed = _tail(server, "--token", "mallory-acme-token-03", "--header", "X-Loom-Principal: olga")
    assert code == 1 and CANARY not in printed
