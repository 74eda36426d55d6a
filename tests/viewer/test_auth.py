"""The viewer's authenticators (``loom_otel.live._auth``): a static tokens file (plain or sha256), OIDC /
JWT bearer tokens verified by PyJWT against a JWKS file (issuer, audience, expiry, signature), and header
identity only behind a declared trusted proxy, with a warning."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.requests import HTTPConnection

from loom_otel.core import LoomOtelWarning, ReasoningConfigError
from loom_otel.live._auth import TOKEN_COOKIE, jwt_authenticator, tokens_file_authenticator
from loom_otel.viewer._settings import ServeSettings

ISSUER, AUDIENCE = "https://idp.example", "loom-viewer"


def _sync(authenticator):
    """The authenticator as a plain function (the JWT one verifies off the event loop: a coroutine)."""

    def call(connection):
        result = authenticator(connection)
        return asyncio.run(result) if inspect.isawaitable(result) else result

    return call


def _connection(token: str | None = None, cookie: str | None = None) -> HTTPConnection:
    headers = []
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    if cookie is not None:
        headers.append((b"cookie", f"{TOKEN_COOKIE}={cookie}".encode()))
    return HTTPConnection({"type": "http", "headers": headers, "query_string": b""})


def test_tokens_file_plain_and_sha256(tmp_path):
    digest = hashlib.sha256(b"olga-secret-token-00000000").hexdigest()
    path = tmp_path / "tokens.toml"
    path.write_text(f'[tokens]\nalice = "alice-secret-token-0000"\nolga = "sha256:{digest}"\n')
    auth = tokens_file_authenticator(path)
    assert auth(_connection("alice-secret-token-0000")).principal == "alice"
    assert auth(_connection("olga-secret-token-00000000")).principal == "olga"
    assert auth(_connection(cookie="olga-secret-token-00000000")) is None  # a token in a cookie: only if asked
    assert (
        tokens_file_authenticator(path, cookie=True)(_connection(cookie="olga-secret-token-00000000")).principal
        == "olga"
    )
    assert auth(_connection(f"sha256:{digest}")) is None  # the digest is not the token
    assert auth(_connection("wrong")) is None and auth(_connection()) is None
    for bad in ('[tokens]\nalice = "short"\n', '[tokens]\nalice = "sha256:abc"\n', "x = 1\n", "[tokens"):
        path.write_text(bad)
        with pytest.raises(ReasoningConfigError, match="tokens file"):
            tokens_file_authenticator(path)


@pytest.fixture
def keys(tmp_path):
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}))
    return private, other, path


def _token(key, **claims) -> str:
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": int(time.time()) + 300, **claims}
    return jwt.encode(body, key, algorithm="RS256", headers={"kid": "k1"})


def test_jwt_bearer_tokens(keys):
    private, other, path = keys
    auth = _sync(jwt_authenticator(str(path), issuer=ISSUER, audience=AUDIENCE))
    assert auth(_connection(_token(private))).principal == "alice"
    assert auth(_connection(cookie=_token(private, sub="bob"))) is None  # a token in a cookie: only if asked
    with_cookie = _sync(jwt_authenticator(str(path), issuer=ISSUER, audience=AUDIENCE, cookie=True))
    assert with_cookie(_connection(cookie=_token(private, sub="bob"))).principal == "bob"
    assert auth(_connection(_token(other))) is None  # signed by a key the issuer does not publish
    assert auth(_connection(_token(private, iss="https://evil.example"))) is None
    assert auth(_connection(_token(private, aud="another-app"))) is None
    assert auth(_connection(_token(private, exp=int(time.time()) - 3600))) is None
    assert auth(_connection(_token(private, sub=""))) is None
    unsigned = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": time.time() + 60}, None, "none")
    assert auth(_connection(unsigned)) is None
    by_email = _sync(jwt_authenticator(str(path), issuer=ISSUER, audience=AUDIENCE, principal_claim="email"))
    assert by_email(_connection(_token(private, email="alice@example.com"))).principal == "alice@example.com"


def test_serve_needs_exactly_one_authenticator_and_warns_for_a_trusted_proxy(tmp_path, keys):
    base = {"source": str(tmp_path), "store": f"file://{tmp_path / 'store'}", "reads_journal": str(tmp_path / "r")}
    with pytest.raises(ReasoningConfigError, match="exactly one authenticator"):
        ServeSettings(**base).authenticator()
    with pytest.raises(ReasoningConfigError, match="exactly one authenticator"):
        ServeSettings(**base, tokens="t.toml", trusted_proxy=True).authenticator()
    with pytest.raises(ReasoningConfigError, match="issuer"):
        ServeSettings(**base, jwks=str(keys[2])).authenticator()
    with pytest.warns(LoomOtelWarning, match="proxy"):
        auth = ServeSettings(**base, trusted_proxy=True).authenticator()
    connection = HTTPConnection({"type": "http", "headers": [(b"x-loom-principal", b"ada")], "query_string": b""})
    assert auth(connection).principal == "ada"


def test_jwt_keys_fetched_from_a_jwks_url(keys):
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    from tests.live.conftest import Server

    private, _, path = keys
    body = path.read_text()
    issuer_keys = Starlette(routes=[Route("/jwks", lambda request: Response(body, media_type="application/json"))])
    with Server(issuer_keys) as server:
        auth = _sync(jwt_authenticator(f"{server.url}/jwks", issuer=ISSUER, audience=AUDIENCE))
        assert auth(_connection(_token(private))).principal == "alice"
        assert auth(_connection(_token(keys[1]))) is None


def test_the_viewer_admits_a_jwt_reader_by_its_subject(keys, captured, tmp_path):
    import httpx2

    from loom_otel.core import FileReasoningStore
    from loom_otel.viewer import create_app
    from tests.live.conftest import Server

    private, other, path = keys
    app = create_app(
        captured.journal,
        FileReasoningStore(captured.root / "store"),
        authenticator=jwt_authenticator(str(path), issuer=ISSUER, audience=AUDIENCE),
        reads_journal=tmp_path / "reads",
    )
    with Server(app) as server:
        url = f"{server.url}/api/executions/run-alice?tenant=acme"
        assert httpx2.get(url, headers={"Authorization": f"Bearer {_token(private)}"}, timeout=30).status_code == 200
        for token in (_token(private, sub="bob"), _token(other), _token(private, aud="x")):
            assert httpx2.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=30).status_code == 404


def test_serve_refuses_a_reads_journal_it_cannot_write(tmp_path, capsys):
    from loom_otel.cli.__main__ import main

    (tmp_path / "journal").mkdir()
    (tmp_path / "tokens.toml").write_text('[tokens]\nalice = "alice-secret-token-0000"\n')
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    common = ["serve", "--journal", str(tmp_path / "journal"), "--store", f"file://{tmp_path / 'store'}"]
    code = main([*common, "--tokens", str(tmp_path / "tokens.toml"), "--reads-journal", str(blocker / "reads")])
    assert code == 2 and "--reads-journal" in capsys.readouterr().err
    assert main([*common]) == 2 and "exactly one authenticator" in capsys.readouterr().err
