"""``LiveReasoningHub`` in isolation: catch-up, head cap, supersede, completion, audience, lag."""

from __future__ import annotations

import asyncio

import pytest

from loom_otel.core._reading._policy import ReadingPolicy, TenantPolicy
from loom_otel.live import (
    CallEnded,
    CallStarted,
    Done,
    LiveCall,
    LiveReasoningHub,
    Partial,
    ReasoningDelta,
    Reset,
    Viewer,
    admits,
)
from tests.live.deltas import delta as _delta

ALICE = Viewer("alice", "acme")
OLGA = Viewer("olga", "acme")


def _call(call_id: int = 1, step: str = "plan", **kw) -> LiveCall:
    fields = {"tenant": "acme", "principal": "alice", "owner": "olga", **kw}
    return LiveCall(call_id, "run-1", step, "anthropic", **fields)


def test_audience_rule():
    call = _call()
    assert admits(call, ALICE) and admits(call, OLGA)
    assert not admits(call, Viewer("mallory", "acme"))
    assert not admits(call, Viewer("alice", "globex"))
    assert not admits(call, Viewer("alice"))
    assert not admits(call, None)
    # DESIGN "Who may read": a call nobody asked for is its tenant's auditors' alone (not its owner's)
    assert not admits(_call(principal=None), OLGA) and not admits(_call(principal=None), ALICE)
    assert not admits(_call(principal=None, owner=None), ALICE)
    audit = ReadingPolicy(tenants={"acme": TenantPolicy(frozenset({"ada"}))}, auditors=frozenset({"root"}))
    for call in (_call(), _call(principal=None), _call(principal=None, owner=None)):
        assert admits(call, Viewer("ada", "acme"), audit) and admits(call, Viewer("root", "acme"), audit)
        assert not admits(call, Viewer("ada", "acme")) and not admits(call, Viewer("ada", "globex"), audit)
    assert not admits(_call(tenant="globex"), Viewer("ada", "globex"), audit)


def test_partial_per_block_head_dropped_past_the_cap():
    hub = LiveReasoningHub(max_partial_chars=10)
    call = _call()
    hub.observe(CallStarted(call))
    hub.observe(_delta(call, "abcd", 1, 0))
    hub.observe(_delta(call, "efgh", 2, 0))
    assert hub.partial("run-1", "plan", tenant="acme") == Partial(call, ((0, "abcdefgh"),), False)
    hub.observe(_delta(call, "WXYZ", 3, 1))
    assert hub.partial("run-1", "plan", tenant="acme") == Partial(call, ((0, "cdefgh"), (1, "WXYZ")), True)
    hub.observe(_delta(call, "0123456789AB", 4, 1))
    assert hub.partial("run-1", "plan", tenant="acme") == Partial(call, ((1, "23456789AB"),), True)


def test_cleared_on_completion_and_superseded_by_a_rerun():
    hub = LiveReasoningHub()
    first, second = _call(1), _call(2)
    hub.observe(CallStarted(first))
    hub.observe(_delta(first, "old"))
    hub.observe(CallStarted(second))  # a re-run of the same step
    hub.observe(_delta(first, "late delta of the superseded call"))
    hub.observe(_delta(second, "new"))
    assert hub.partial("run-1", "plan", tenant="acme") == Partial(second, ((0, "new"),), False)
    hub.observe(CallEnded(first, "completed", kept=True, attempt=1))  # superseded: ignored
    assert hub.partial("run-1", "plan", tenant="acme") is not None
    hub.observe(CallEnded(second, "completed", kept=True, attempt=2))
    assert hub.partial("run-1", "plan", tenant="acme") is None
    done = hub.ended_step("run-1", "plan", ALICE)
    assert done is not None and done.call == second and done.attempt == 2
    assert hub.ended_step("run-1", "plan", Viewer("mallory", "acme")) is None


async def _drain(subscription, until=Done, timeout=2.0):
    events = []
    while not any(isinstance(e, until) for e in events):
        batch = await asyncio.wait_for(subscription.next_batch(0.5), timeout)
        events.extend(batch)
    return events


async def test_late_subscriber_gets_partial_then_deltas_then_done():
    hub = LiveReasoningHub()
    call = _call()
    hub.observe(CallStarted(call))
    hub.observe(_delta(call, "so far", 1))
    assert hub.subscribe("run-1", Viewer("mallory", "acme")) is None
    assert hub.subscribe("run-1", Viewer("alice", "globex")) is None
    assert hub.subscribe("nope", ALICE) is None
    subscription = hub.subscribe("run-1", ALICE)
    assert subscription is not None
    hub.observe(_delta(call, ", and more", 2))
    hub.observe(CallEnded(call, "completed", kept=True, attempt=1))
    events = await _drain(subscription)
    assert events[0] == Partial(call, ((0, "so far"),), False)
    assert [e.text.text for e in events if isinstance(e, ReasoningDelta)] == [", and more"]
    assert events[-1] == Done(call, "completed", True, 1, True)
    subscription.close()

    late = hub.subscribe("run-1", OLGA)
    assert late is not None
    (replayed,) = await late.next_batch(0.1)
    assert replayed == Done(call, "completed", True, 1, True, replay=True)
    late.close()


async def test_steps_of_other_askers_are_filtered_out():
    hub = LiveReasoningHub()
    mine, theirs = _call(1, "a"), _call(2, "b", principal="bob")
    for call in (mine, theirs):
        hub.observe(CallStarted(call))
        hub.observe(_delta(call, f"text of {call.step_id}"))
    subscription = hub.subscribe("run-1", ALICE)
    assert subscription is not None
    hub.observe(_delta(theirs, "more of b", 2))
    hub.observe(CallEnded(theirs, "completed"))
    hub.observe(CallEnded(mine, "completed"))
    events = await _drain(subscription)
    assert all(getattr(e, "call", mine) == mine for e in events)
    assert not [e for e in events if isinstance(e, ReasoningDelta)]
    subscription.close()
    owner = hub.subscribe("run-1", OLGA)
    assert owner is not None
    assert {e.call.step_id for e in await owner.next_batch(0.1)} == {"a", "b"}
    owner.close()


async def test_a_lagging_viewer_is_resynchronised():
    hub = LiveReasoningHub(subscriber_capacity=4)
    call = _call()
    hub.observe(CallStarted(call))
    subscription = hub.subscribe("run-1", ALICE)
    assert subscription is not None
    for seq in range(1, 11):
        hub.observe(_delta(call, str(seq % 10), seq))
    events = await subscription.next_batch(0.1)
    assert events == [Reset(None), Partial(call, ((0, "1234567890"),), False)]
    subscription.close()


@pytest.mark.parametrize("executions", [3])
def test_memory_is_bounded(executions):
    hub = LiveReasoningHub(max_executions=executions, max_steps=2)
    for index in range(10):
        call = LiveCall(index, f"run-{index}", "s", "anthropic", None, "alice")
        hub.observe(CallStarted(call))
        hub.observe(CallEnded(call, "completed"))
    assert len(hub._executions) == executions
    for index in range(5):
        call = LiveCall(100 + index, "run-9", f"step-{index}", "anthropic", None, "alice")
        hub.observe(CallEnded(call, "completed"))
    assert [d.call.step_id for d in hub.ended_steps("run-9", Viewer("alice"))] == ["step-3", "step-4"]


def test_a_viewer_without_a_principal_is_nobody():
    nobodys = [_call(principal=None, owner=None), _call(principal="", owner=""), _call(principal=None, owner="")]
    for viewer in (Viewer(""), Viewer(None), Viewer("", "acme"), Viewer(None, "acme")):
        assert not any(admits(call, viewer) for call in nobodys), viewer
        assert not admits(_call(principal=None), viewer) and not admits(_call(), viewer)
    assert not admits(_call(principal=""), Viewer("", "acme")) and not admits(_call(principal=""), OLGA)


async def test_a_viewer_without_a_principal_gets_no_feed_of_an_ownerless_call():
    hub = LiveReasoningHub()
    call = _call(principal=None, owner=None)
    hub.observe(CallStarted(call))
    hub.observe(_delta(call, "CANARY-ownerless-7f3a"))
    hub.observe(CallEnded(call, "completed", kept=True, attempt=1))
    for viewer in (Viewer("", "acme"), Viewer(None, "acme")):  # None: an authenticator's slip
        assert hub.subscribe("run-1", viewer) is None
        assert not hub.knows("run-1", viewer) and hub.readable("run-1", viewer) == []


async def test_calls_of_other_principals_sharing_a_step_name_stay_apart():
    hub = LiveReasoningHub()
    mine, theirs = _call(1, "plan"), _call(2, "plan", principal="bob")
    hub.observe(CallStarted(mine))
    hub.observe(_delta(mine, "CANARY-alice-1 "))
    alice = hub.subscribe("run-1", ALICE)
    assert alice is not None
    hub.observe(CallStarted(theirs))  # bob's call of a step named the same: not a re-run of alice's
    bob = hub.subscribe("run-1", Viewer("bob", "acme"))
    assert bob is not None
    hub.observe(_delta(theirs, "CANARY-bob-1"))
    hub.observe(_delta(mine, "and more", 2))  # alice's call still streams
    hub.observe(CallEnded(theirs, "completed", kept=True, attempt=2, refs=("r-bob",)))
    hub.observe(CallEnded(mine, "completed", kept=True, attempt=1, refs=("r-alice",)))
    seen_by_alice, seen_by_bob = await _drain(alice), await _drain(bob)
    assert "CANARY-bob" not in repr(seen_by_alice) and "CANARY-alice" not in repr(seen_by_bob)
    assert not any(isinstance(e, Reset) for e in seen_by_alice + seen_by_bob)
    assert [e.text.text for e in seen_by_alice if isinstance(e, ReasoningDelta)] == ["and more"]
    assert seen_by_alice[-1] == Done(mine, "completed", True, 1, True, refs=("r-alice",))
    assert seen_by_bob[-1].call == theirs
    alice.close()
    bob.close()
    assert [d.refs for d in hub.readable("run-1", ALICE, "plan")] == [("r-alice",)]
    assert [d.refs for d in hub.readable("run-1", Viewer("bob", "acme"), "plan")] == [("r-bob",)]
    assert [d.refs for d in hub.readable("run-1", OLGA, "plan")] == [("r-alice",), ("r-bob",)]
    assert hub.ended_step("run-1", "plan", ALICE) == Done(mine, "completed", True, 1, True, refs=("r-alice",))


async def test_a_rerun_by_the_same_reader_keeps_the_earlier_capture_readable():
    hub = LiveReasoningHub()
    first, second = _call(1), _call(2)
    hub.observe(CallEnded(first, "completed", kept=True, attempt=1, refs=("r-1",)))
    hub.observe(CallStarted(second))
    assert [d.attempt for d in hub.readable("run-1", ALICE)] == [1]  # readable while the re-run streams
    feed = hub.subscribe("run-1", ALICE)
    assert feed is not None
    assert await feed.next_batch(0.1) == [Partial(second, (), False)]  # the re-run, not the superseded end
    hub.observe(CallEnded(second, "completed", kept=True, attempt=2, refs=("r-2",)))
    assert [d.attempt for d in hub.readable("run-1", ALICE)] == [1, 2]
    assert [d.attempt for d in hub.ended_steps("run-1", ALICE)] == [2]
    feed.close()
