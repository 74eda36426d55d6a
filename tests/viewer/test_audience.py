"""The durable audience (DESIGN "Who may read"): every capture record and event carries
``loom.principal`` and ``loom.owner`` (from ``execution()``, else the principal named by baggage), and,
with ``LOOM_OTEL_VIEWER_URL``, ``loom.reasoning.url`` on the event and on the span; the one reading rule
and the policy file it reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry import baggage, context

from loom_otel.audit._captures import iter_captures
from loom_otel.core import LoomOtelWarning, ReasoningConfig, ReasoningConfigError, execution
from loom_otel.core._evidence._journal._reader import iter_records
from loom_otel.core._reading._policy import Audience, ReadingPolicy, TenantPolicy, load_policy, may_read
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request

CANARY = "CANARY-viewer-audience-51c2"


@pytest.fixture
def sim() -> Simulator:
    return Simulator(reasoning_text=f"Think about the audience. {CANARY}")


def _captures(journal_dir: Path) -> list[dict[str, object]]:
    return [r["attributes"] for r in iter_records(journal_dir) if r.get("type") == "capture"]  # type: ignore[misc]


@pytest.mark.parametrize("mode", list(MODES))
def test_principal_and_owner_from_the_execution_scope_in_every_mode(mode, sim, config, journal_dir):
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with execution("run-aud", tenant="acme", principal="alice", owner="olga"):
            MODES[mode](sim, request())
    (record,) = _captures(journal_dir)
    assert record["loom.principal"] == "alice" and record["loom.owner"] == "olga"
    (event,) = reasoning_events(telemetry.spans)
    assert event["loom.principal"] == "alice" and event["loom.owner"] == "olga"
    (capture,) = iter_captures(journal_dir)
    assert (capture.tenant, capture.principal, capture.owner) == ("acme", "alice", "olga")
    assert "loom.reasoning.url" not in event  # no viewer configured: no link
    assert not find_leaks([CANARY], spans=telemetry.spans, directories=[journal_dir])


@pytest.mark.parametrize("mode", list(MODES))
def test_principal_from_baggage_without_a_scope(mode, sim, store, journal_dir, monkeypatch):
    monkeypatch.setenv("LOOM_OTEL_PRINCIPAL_BAGGAGE", "enduser.id")
    token = context.attach(baggage.set_baggage("enduser.id", "bob", baggage.set_baggage("user.id", "eve")))
    try:
        with (
            pytest.warns(LoomOtelWarning, match="edge overwrites it"),
            instrumented(AnthropicInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)),
        ):
            MODES[mode](sim, request())
    finally:
        context.detach(token)
    (record,) = _captures(journal_dir)
    assert record["loom.principal"] == "bob" and "loom.owner" not in record


def test_no_principal_anywhere_records_none(sim, config, journal_dir):
    with instrumented(AnthropicInstrumentor(), config=config):
        MODES["sync"](sim, request())
    (record,) = _captures(journal_dir)
    assert "loom.principal" not in record and "loom.owner" not in record


@pytest.mark.parametrize("mode", list(MODES))
def test_the_viewer_link_is_on_the_event_and_the_span(mode, sim, store, journal_dir):
    config = ReasoningConfig(store=store, journal=journal_dir, viewer_url="https://viewer.example/loom/")
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        with execution("run 42/x", tenant="acme", principal="alice"):
            MODES[mode](sim, request())
    (event,) = reasoning_events(telemetry.spans)
    url = event["loom.reasoning.url"]
    step_id = event["loom.step.id"]
    assert url == f"https://viewer.example/loom/executions/run%2042%2Fx?tenant=acme&step={step_id}#attempt-1"
    (span,) = [s for s in telemetry.spans if any(e.name == "loom.reasoning.captured" for e in s.events)]
    assert span.attributes["loom.reasoning.url"] == url
    (record,) = _captures(journal_dir)
    assert record["loom.reasoning.url"] == url


@pytest.mark.parametrize(
    ("variable", "value"),
    [("LOOM_OTEL_VIEWER_URL", "ftp://x"), ("LOOM_OTEL_VIEWER_URL", "viewer"), ("LOOM_OTEL_PRINCIPAL_BAGGAGE", "a b")],
)
def test_bad_settings_are_config_errors_naming_the_variable(variable, value, monkeypatch, store, journal_dir):
    monkeypatch.setenv(variable, value)
    with (
        pytest.raises(ReasoningConfigError, match=variable),
        instrumented(AnthropicInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)),
    ):
        pass


POLICY = ReadingPolicy(
    auditors=frozenset({"root"}),
    tenants={"acme": TenantPolicy(frozenset({"ada"}), "30d"), "globex": TenantPolicy(frozenset({"gus"}))},
)


def test_the_reading_rule():
    part = Audience("acme", "alice", "olga")
    assert may_read("alice", part, POLICY) and may_read("olga", part, POLICY)
    assert may_read("ada", part, POLICY) and may_read("root", part, POLICY)
    assert not may_read("gus", part, POLICY) and not may_read("mallory", part, POLICY)
    assert not may_read(None, part, POLICY) and not may_read("", part, POLICY)
    nobodys = Audience("acme", None, "olga")
    assert not may_read("olga", nobodys, POLICY) and may_read("ada", nobodys, POLICY)
    untenanted = Audience(None, None)
    assert may_read("root", untenanted, POLICY) and not may_read("ada", untenanted, POLICY)
    assert may_read("alice", Audience(None, "alice"), POLICY) and not may_read("ada", Audience(None, "alice"), POLICY)
    assert POLICY.audited_tenants("ada") == {"acme"} and POLICY.audited_tenants("root") is None


def test_policy_file(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text(
        '[global]\nauditors = ["root"]\n\n[tenants.acme]\nauditors = ["ada"]\nretention = "30d"\n\n'
        '[tenants.globex]\nauditors = ["gus"]\n'
    )
    assert load_policy(path) == POLICY
    retentions = load_policy(path).retentions()
    assert set(retentions) == {"acme"} and retentions["acme"] is not None and retentions["acme"].seconds == 30 * 86400
    for bad, match in [
        ('[tenants.acme]\nretention = "soon"\n', "retention"),
        ('[tenants.acme]\nreaders = ["x"]\n', "unknown key"),
        ("[global]\nauditors = 3\n", "auditors"),
        ("not toml =", "not TOML"),
    ]:
        path.write_text(bad)
        with pytest.raises(ReasoningConfigError, match=match):
            load_policy(path)


def test_a_bad_policy_file_is_reported_at_instrument(monkeypatch, store, journal_dir, tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text('[tenants.acme]\nretention = "soon"\n')
    monkeypatch.setenv("LOOM_OTEL_POLICY", str(policy))
    with (
        pytest.raises(ReasoningConfigError, match=r"LOOM_OTEL_POLICY.*retention"),
        instrumented(AnthropicInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)),
    ):
        pass
    policy.write_text('[tenants.acme]\nauditors = ["ada"]\nretention = "30d"\n')
    with instrumented(AnthropicInstrumentor(), config=ReasoningConfig(store=store, journal=journal_dir)):
        pass
