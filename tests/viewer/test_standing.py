"""``loom-otel serve --trust KEYFILE``: each part on the page and in the JSON carries the standing of its
record (``signed`` with the deployment's key trusted, ``unproven`` without it)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from loom_otel.cli.__main__ import build_parser
from loom_otel.core import ReasoningConfig
from loom_otel.core._evidence._journal._checkpoint import generate_key
from loom_otel.core.exceptions import ReasoningConfigError
from loom_otel.testing import find_leaks
from loom_otel.viewer._settings import SETTINGS_VARIABLE, ServeSettings, app_from_environment
from tests.live.conftest import Server
from tests.viewer.conftest import CANARY, TOKENS, bearer, capture_run


@pytest.fixture
def signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """One execution captured into a journal whose checkpoints a deployment key signs; the serve
    settings over it (the key is not in this process's environment: only ``--trust`` can trust it)."""
    monkeypatch.delenv("LOOM_OTEL_CHECKPOINT_KEY", raising=False)
    key = tmp_path / "deploy.pem"
    public = tmp_path / "deploy.pub"
    public.write_text(generate_key(key))
    config = ReasoningConfig(store=f"file://{tmp_path / 'store'}", journal=tmp_path / "journal", checkpoint_key=key)
    capture_run(config, f"{CANARY} standing", "run-alice", principal="alice")
    tokens = tmp_path / "tokens.toml"
    tokens.write_text("[tokens]\n" + "".join(f'{p} = "{t}"\n' for p, t in TOKENS.items()))
    return {
        "source": str(tmp_path / "journal"),
        "store": f"file://{tmp_path / 'store'}",
        "reads_journal": str(tmp_path / "reads"),
        "tokens": str(tokens),
        "public": str(public),
    }


def _parts(server: Server) -> list[dict[str, object]]:
    response = httpx2.get(f"{server.url}/api/executions/run-alice?tenant=acme", headers=bearer("alice"), timeout=30)
    assert response.status_code == 200
    parts: list[dict[str, object]] = response.json()["steps"][0]["attempts"][0]["parts"]
    return parts


def test_each_part_carries_its_standing(signed: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    public = signed.pop("public")
    trusted = ServeSettings(**signed, trust=(public,))
    monkeypatch.setenv(SETTINGS_VARIABLE, trusted.to_environment())
    with Server(app_from_environment()) as server:  # as each uvicorn worker builds it
        assert [p["standing"] for p in _parts(server)] == ["signed"]
        page = httpx2.get(f"{server.url}/executions/run-alice?tenant=acme", headers=bearer("alice"), timeout=30)
        assert page.status_code == 200 and '<td class="standing">signed</td>' in page.text
        assert "No checkpoint key is trusted" not in page.text
    with Server(ServeSettings(**signed).app()) as server:
        assert [p["standing"] for p in _parts(server)] == ["unproven"]
        page = httpx2.get(f"{server.url}/executions/run-alice?tenant=acme", headers=bearer("alice"), timeout=30)
        assert '<td class="standing">unproven</td>' in page.text
        assert "No checkpoint key is trusted (serve --trust KEYFILE)" in page.text  # why erasures read missing
    assert not find_leaks([CANARY], texts=[trusted.to_environment()])


def test_serve_takes_trust_keyfiles_and_refuses_one_that_is_no_key(signed: dict[str, str], tmp_path: Path) -> None:
    args = build_parser().parse_args(
        ["serve", "--journal", signed["source"], "--trust", signed["public"], "--trust", "other.pub"]
    )
    assert args.trust == [signed["public"], "other.pub"]
    not_a_key = tmp_path / "not-a-key.pub"
    not_a_key.write_text("hello")
    settings = {k: v for k, v in signed.items() if k != "public"}
    with pytest.raises(ReasoningConfigError, match="--trust"):
        ServeSettings(**settings, trust=(str(not_a_key),)).check()
    assert json.loads(ServeSettings(**settings, trust=(signed["public"],)).to_environment())["trust"] == [
        signed["public"]
    ]


def test_audit_reads_shows_each_read_records_standing(
    signed: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from loom_otel.cli.__main__ import main

    public = signed.pop("public")
    monkeypatch.setenv("LOOM_OTEL_CHECKPOINT_KEY", str(tmp_path / "deploy.pem"))  # the viewer signs its reads
    app = ServeSettings(**signed).app()
    with Server(app) as server:
        assert [p["standing"] for p in _parts(server)] == ["signed"]  # its own key is trusted
    app.state.reads.close()
    monkeypatch.delenv("LOOM_OTEL_CHECKPOINT_KEY")
    capsys.readouterr()
    assert main(["audit", "reads", "--journal", signed["reads_journal"], "--json", "--trust", public]) == 0
    (read,) = json.loads(capsys.readouterr().out)
    assert (read["reader"], read["outcome"], read["standing"]) == ("alice", "ok", "signed")
    assert main(["audit", "reads", "--journal", signed["reads_journal"]]) == 0
    table = capsys.readouterr().out
    assert "standing" in table.splitlines()[0] and "unproven" in table
