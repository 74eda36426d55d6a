"""Sessions and hosts of ``loom-otel serve`` (DESIGN "Who may read": sessions): the tokens file is read
again when it changes, a browser's cookie holds a session value MAC'd with a key shared by the workers and
bound to the token's digest (never the token), removing the token or signing out ends the session, only
the hosts of the public URL are answered, and every execution id the list shows opens."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote, unquote

import httpx2
import pytest

from loom_otel.core import FileReasoningStore, LoomOtelWarning, ReasoningConfig, ReasoningConfigError, execution
from loom_otel.core._reading._policy import load_policy
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live._auth import header_authenticator
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from loom_otel.viewer import create_app, tokens_file_authenticator
from loom_otel.viewer._settings import ServeSettings
from tests.anthropic.modes import MODES, request
from tests.live.conftest import Server
from tests.viewer.conftest import BOB_TEXT, CANARY, TOKENS, Captured, bearer

BOB_PAGE = "/api/executions/run-bob?tenant=acme"
SAME_SITE = {"sec-fetch-site": "same-origin"}


def _app(captured: Captured, reads: Path, **kw):
    return create_app(
        captured.journal,
        FileReasoningStore(captured.root / "store"),
        authenticator=kw.pop("authenticator", None) or tokens_file_authenticator(captured.tokens),
        reads_journal=reads,
        policy=load_policy(captured.policy),
        **kw,
    )


def _signed_in(client: httpx2.Client, principal: str) -> str:
    """Sign ``principal`` in; the session cookie's value."""
    signed = client.post("/signin", data={"token": TOKENS[principal], "next": "/"}, headers=SAME_SITE)
    assert signed.status_code == 303
    value = client.cookies.get("loom_otel_session")
    assert value
    return value


def _with_cookie(server: Server, value: str, path: str = BOB_PAGE) -> int:
    return httpx2.get(f"{server.url}{path}", cookies={"loom_otel_session": value}, timeout=30).status_code


def test_the_cookie_holds_a_session_never_the_token(captured: Captured, tmp_path: Path):
    with Server(_app(captured, tmp_path / "reads")) as server, httpx2.Client(base_url=server.url, timeout=30) as client:
        value = _signed_in(client, "bob")
        set_cookie = client.post("/signin", data={"token": TOKENS["bob"], "next": "/"}, headers=SAME_SITE)
        assert TOKENS["bob"] not in unquote(set_cookie.headers["set-cookie"])
        assert TOKENS["bob"] not in unquote(value) and TOKENS["bob"] not in str(client.cookies)
        assert _with_cookie(server, value) == 200
        assert BOB_TEXT in httpx2.get(f"{server.url}{BOB_PAGE}", cookies={"loom_otel_session": value}).text
        # a cookie holding the token itself (what an earlier version set) proves nobody
        token_cookie = {"loom_otel_token": TOKENS["bob"]}
        assert httpx2.get(f"{server.url}{BOB_PAGE}", cookies=token_cookie, timeout=30).status_code == 404
        forged = value[: value.rindex(".") + 1] + "A" * 43  # a session value not MAC'd with the server key
        assert _with_cookie(server, forged) == 404


def test_a_token_removed_while_serving_ends_its_bearer_and_its_sessions(captured: Captured, tmp_path: Path):
    with Server(_app(captured, tmp_path / "reads")) as server, httpx2.Client(base_url=server.url, timeout=30) as client:
        value = _signed_in(client, "bob")
        assert httpx2.get(f"{server.url}{BOB_PAGE}", headers=bearer("bob"), timeout=30).status_code == 200
        assert _with_cookie(server, value) == 200
        captured.tokens.write_text("[tokens]\n" + "".join(f'{p} = "{t}"\n' for p, t in TOKENS.items() if p != "bob"))
        assert httpx2.get(f"{server.url}{BOB_PAGE}", headers=bearer("bob"), timeout=30).status_code == 404
        assert _with_cookie(server, value) == 404
        assert httpx2.get(f"{server.url}/api/executions", headers=bearer("ada"), timeout=30).status_code == 200
        # a new token for bob: the old sessions stay ended (bound to the old token's digest)
        fresh = "bob-new-token-0123456789abcdef"
        captured.tokens.write_text(captured.tokens.read_text() + f'bob = "{fresh}"\n')
        headers = {"Authorization": f"Bearer {fresh}"}
        assert httpx2.get(f"{server.url}{BOB_PAGE}", headers=headers, timeout=30).status_code == 200
        assert _with_cookie(server, value) == 404


def test_signing_out_ends_the_session_on_every_worker(captured: Captured, tmp_path: Path):
    key = tmp_path / "keys" / "session.key"
    first = Server(_app(captured, tmp_path / "reads-1", session_key=key))
    second = Server(_app(captured, tmp_path / "reads-2", session_key=key))
    with first, second, httpx2.Client(base_url=first.url, timeout=30) as client:
        assert oct(key.stat().st_mode & 0o777) == "0o600"
        value = _signed_in(client, "bob")
        assert _with_cookie(second, value) == 200  # another worker, the same key: the same session
        assert client.get("/signout", headers=SAME_SITE).status_code == 303
        assert _with_cookie(first, value) == 404 and _with_cookie(second, value) == 404  # a replay is refused
        other = _signed_in(client, "bob")  # signing in again opens a new session
        assert other != value and _with_cookie(second, other) == 200
    assert not find_leaks([CANARY, TOKENS["bob"]], directories=[key.parent])


def test_only_the_hosts_of_the_public_url_are_answered_behind_a_trusted_proxy(captured: Captured, tmp_path: Path):
    with pytest.warns(LoomOtelWarning, match="X-Loom-Principal"):
        authenticator = header_authenticator()
    app = _app(captured, tmp_path / "reads", authenticator=authenticator, hosts={"viewer.example"})
    with Server(app) as server:
        who = {"X-Loom-Principal": "bob"}
        rebound = httpx2.get(f"{server.url}{BOB_PAGE}", headers={**who, "Host": "attacker.example"}, timeout=30)
        assert rebound.status_code == 421 and BOB_TEXT not in rebound.text
        assert httpx2.get(f"{server.url}/", headers={**who, "Host": "attacker.example:80"}).status_code == 421
        ours = httpx2.get(f"{server.url}{BOB_PAGE}", headers={**who, "Host": "viewer.example"}, timeout=30)
        assert ours.status_code == 200 and BOB_TEXT in ours.text


def test_serve_answers_the_public_url_and_loopback_when_bound_there(captured: Captured, tmp_path: Path):
    common = {"source": str(captured.journal), "store": captured.store_url, "reads_journal": str(tmp_path / "r")}
    proxied = ServeSettings(**common, trusted_proxy=True, bind="0.0.0.0")
    with pytest.raises(ReasoningConfigError, match="--public-url"):
        proxied.check()
    public = ServeSettings(**common, trusted_proxy=True, bind="0.0.0.0", public_url="https://Viewer.example:8443/x")
    assert public.hosts() == {"viewer.example"}
    local = ServeSettings(**common, tokens=str(captured.tokens), public_url="https://viewer.example/")
    assert local.hosts() == {"viewer.example", "localhost", "127.0.0.1", "::1"}
    assert ServeSettings(**common, tokens=str(captured.tokens), bind="0.0.0.0").hosts() is None


def test_an_execution_id_with_a_slash_opens_from_the_list(tmp_path: Path):
    root = tmp_path
    config = ReasoningConfig(store=f"file://{root / 'store'}", journal=root / "journal")
    with instrumented(AnthropicInstrumentor(), config=config):
        with execution("team/run 7", tenant="acme", principal="bob"):
            MODES["sync"](Simulator(reasoning_text=BOB_TEXT), request())
    tokens = root / "tokens.toml"
    tokens.write_text(f'[tokens]\nbob = "{TOKENS["bob"]}"\n')
    app = create_app(
        root / "journal",
        FileReasoningStore(root / "store"),
        authenticator=tokens_file_authenticator(tokens),
        reads_journal=root / "reads",
    )
    with Server(app) as server:
        listed = httpx2.get(f"{server.url}/api/executions", headers=bearer("bob"), timeout=30).json()
        assert [r["execution_id"] for r in listed] == ["team/run 7"]
        html = httpx2.get(f"{server.url}/", headers=bearer("bob"), timeout=30).text
        link = "/executions/" + quote("team/run 7", safe="")
        assert f'href="{link}' in html
        for path in (f"{link}?tenant=acme", f"/api{link}?tenant=acme"):
            page = httpx2.get(f"{server.url}{path}", headers=bearer("bob"), timeout=30)
            assert page.status_code == 200 and BOB_TEXT in page.text
    assert os.path.isdir(root / "reads")


def test_a_session_ends_by_a_day_and_a_jwt_session_by_its_exp():
    import base64
    import json
    import time

    from loom_otel.viewer._sessions import SESSION_SECONDS, Sessions

    sessions, now = Sessions(), time.time()
    value = sessions.start("alice", TOKENS["alice"], now=now)
    assert sessions.principal(value, now=now + 60) == "alice"
    assert sessions.principal(value, now=now + SESSION_SECONDS + 1) is None
    claims = base64.urlsafe_b64encode(json.dumps({"sub": "bob", "exp": int(now) + 300}).encode()).decode().rstrip("=")
    jwt_session = sessions.start("bob", f"eyJhbGciOiJSUzI1NiJ9.{claims}.c2ln", now=now)
    assert sessions.principal(jwt_session, now=now + 60) == "bob"
    assert sessions.principal(jwt_session, now=now + 301) is None
    assert Sessions().principal(value, now=now + 60) is None  # another server key: not a session of ours


def test_a_session_key_others_can_read_is_refused(tmp_path: Path):
    from loom_otel.viewer._sessions import load_session_key

    key = tmp_path / "session.key"
    made = load_session_key(key)
    assert len(made) == 32 and load_session_key(key) == made and oct(key.stat().st_mode & 0o777) == "0o600"
    key.chmod(0o644)
    with pytest.raises(ReasoningConfigError, match="readable by others"):
        load_session_key(key)


@pytest.mark.slow
def test_serve_with_two_workers_shares_sessions_and_answers_only_its_hosts(captured: Captured, tmp_path: Path):
    """``loom-otel serve --workers 2`` as a person starts it: a session opened by one worker is honoured,
    and ended, by both (the key file and its sign-outs); a request for another host gets 421."""
    import subprocess
    import sys

    from tests.e2e_trail.receiver import free_port
    from tests.e2e_trail.test_phoenix import wait_until

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [
        sys.executable, "-m", "loom_otel.cli", "serve", "--journal", str(captured.journal),
        "--store", captured.store_url, "--tokens", str(captured.tokens), "--policy", str(captured.policy),
        "--reads-journal", str(tmp_path / "reads"), "--port", str(port), "--workers", "2",
        "--public-url", "https://viewer.example/",
    ]  # fmt: skip
    with (tmp_path / "serve.log").open("ab") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until(lambda: httpx2.get(f"{base}/signin", timeout=2).status_code == 200, 60, "loom-otel serve")
            with httpx2.Client(base_url=base, timeout=30) as client:
                value = _signed_in(client, "bob")
            key = tmp_path / "state" / "loom-otel" / "viewer-session.key"  # XDG_STATE_HOME (tests/conftest.py)
            assert key.exists() and oct(key.stat().st_mode & 0o777) == "0o600"
            cookies = {"loom_otel_session": value}
            answers = [httpx2.get(f"{base}{BOB_PAGE}", cookies=cookies, timeout=30).status_code for _ in range(12)]
            assert answers == [200] * 12  # two workers, one session
            ended = httpx2.get(f"{base}/signout", cookies=cookies, headers=SAME_SITE, timeout=30)
            assert ended.status_code == 303
            answers = [httpx2.get(f"{base}{BOB_PAGE}", cookies=cookies, timeout=30).status_code for _ in range(12)]
            assert answers == [404] * 12  # signed out on one worker: refused by both
            rebound = httpx2.get(f"{base}{BOB_PAGE}", headers={**bearer("bob"), "Host": "attacker.example"})
            assert rebound.status_code == 421
            public = httpx2.get(f"{base}{BOB_PAGE}", headers={**bearer("bob"), "Host": "viewer.example"})
            assert public.status_code == 200
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
