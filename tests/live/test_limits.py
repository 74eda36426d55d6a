"""Live feeds are bounded in number: per viewer and in all; extra viewers are refused cleanly."""

from __future__ import annotations

import io
import time

import httpx2
import pytest

from loom_otel.cli.__main__ import build_parser
from loom_otel.cli._tail import EXIT_UNREACHABLE, run
from loom_otel.core import ReasoningConfigError
from loom_otel.core.exceptions import LiveSubscriberLimitError
from loom_otel.live import CallStarted, LiveCall, LiveReasoningHub, Viewer
from loom_otel.live.asgi import create_app
from tests.live.deltas import delta as _delta
from tests.live.sse import SseReader
from tests.live.viewers import ALICE, ALICE_GLOBEX, MALLORY, OLGA, authenticator

CANARY = "CANARY-feed-limits-41be07"
CALL = LiveCall(1, "run-1", "plan", "anthropic", "acme", "alice", "olga")


def _hub(**caps: int) -> LiveReasoningHub:
    hub = LiveReasoningHub(**caps)
    hub.observe(CallStarted(CALL))
    hub.observe(_delta(CALL, f"Thinking: {CANARY}"))
    return hub


async def test_feeds_are_capped_per_viewer_and_in_all():
    hub = _hub(max_subscribers=3, max_subscribers_per_viewer=2)
    alice, olga = Viewer("alice", "acme"), Viewer("olga", "acme")
    feeds = [hub.subscribe("run-1", alice), hub.subscribe("run-1", alice)]
    with pytest.raises(LiveSubscriberLimitError, match="2 feeds of this viewer's") as refused:
        hub.subscribe("run-1", alice)
    assert refused.value.per_viewer and refused.value.limit == 2 and CANARY not in str(refused.value)
    feeds.append(hub.subscribe("run-1", olga))
    with pytest.raises(LiveSubscriberLimitError, match="3 feeds in all") as full:
        hub.subscribe("run-1", olga)
    assert not full.value.per_viewer
    assert hub.subscribe("run-1", Viewer("mallory", "acme")) is None  # not the audience: no feed, as before
    assert hub.viewers("run-1", tenant="acme") == 3
    feeds[0].close()  # a closed feed frees its place
    again = hub.subscribe("run-1", alice)
    assert again is not None and CANARY in repr([e.blocks for e in await again.next_batch(0.1)])
    for feed in [*feeds[1:], again]:
        feed.close()
    assert hub.viewers("run-1", tenant="acme") == 0


def test_caps_must_be_positive():
    with pytest.raises(ReasoningConfigError, match="max_subscribers_per_viewer"):
        LiveReasoningHub(max_subscribers_per_viewer=0)
    with pytest.raises(ReasoningConfigError, match="max_subscribers"):
        LiveReasoningHub(max_subscribers=-1)


def _wait_viewers(hub: LiveReasoningHub, count: int) -> None:
    deadline = time.monotonic() + 10
    while hub.viewers("run-1", tenant="acme") != count:
        assert time.monotonic() < deadline, f"{hub.viewers('run-1', tenant='acme')} viewers, not {count}"
        time.sleep(0.02)


def test_extra_viewers_get_429_or_503_over_http(serve):
    hub = _hub(max_subscribers=2, max_subscribers_per_viewer=1)
    hub.observe(CallStarted(LiveCall(2, "run-1", "draft", "anthropic", "acme", "mallory")))  # her own call
    server = serve(create_app(hub, authenticator=authenticator(), keepalive=0.2))
    url = f"{server.url}/executions/run-1/reasoning"
    with SseReader(url, ALICE) as first:
        assert first.status == 200 and first.get()[0] == "reasoning-partial"
        busy = httpx2.get(url, headers=ALICE)
        assert busy.status_code == 429 and busy.headers["retry-after"] == "5"
        assert busy.json()["error"] == "too many live feeds open for this viewer (at most 1); close one"
        with SseReader(url, OLGA) as second:
            assert second.status == 200
            full = httpx2.get(url, headers=MALLORY)
            assert full.status_code == 503 and full.headers["retry-after"] == "5"
            assert full.json()["error"] == "the live view serves its maximum of 2 feeds; try again later"
            stranger = httpx2.get(url, headers=ALICE_GLOBEX)
            assert stranger.status_code == 404  # not the audience: the same 404 as ever, full or not
        _wait_viewers(hub, 1)  # the client went away: its feed is closed and its place is free
        with SseReader(url, MALLORY) as third:
            assert third.status == 200
            name, partial = third.get()
            assert (name, partial["step"], partial["blocks"]) == ("reasoning-partial", "draft", [])
    assert all(CANARY not in r.text for r in (busy, full, stranger))
    _wait_viewers(hub, 0)


def test_tail_says_why_it_was_refused(serve, capsys):
    hub = _hub(max_subscribers_per_viewer=1)
    server = serve(create_app(hub, authenticator=authenticator(), keepalive=0.2))
    with SseReader(f"{server.url}/executions/run-1/reasoning", ALICE) as holder:
        assert holder.status == 200
        argv = ["tail", "--execution", "run-1", "--url", server.url, "--token", "alice-acme-token-0001"]
        out = io.StringIO()
        assert run(build_parser().parse_args([*argv, "--timeout", "5"]), out) == EXIT_UNREACHABLE
    err = capsys.readouterr().err
    assert "HTTP 429: too many live feeds open for this viewer (at most 1)" in err
    assert CANARY not in err + out.getvalue()
