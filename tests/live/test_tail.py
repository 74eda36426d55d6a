"""``loom-otel tail``: the live view in a terminal, over real HTTP."""

from __future__ import annotations

import io
import threading
import time

import pytest

from loom_otel.cli.__main__ import build_parser, main
from loom_otel.cli._tail import run, sanitize, sse_events
from loom_otel.core import ReasoningConfig, execution, step
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import flush_live
from loom_otel.live.asgi import create_app
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator
from tests.live.modes import anthropic_request
from tests.live.viewers import ALICE_NO_TENANT_TOKEN, authenticator

HOSTILE = "Plan: check the sky.\x1b]0;pwned\x07\x1b[2J\u202eevil\u202c Then answer.\tok"


def test_sanitize_strips_terminal_controls():
    assert sanitize(HOSTILE) == "Plan: check the sky.]0;pwned[2Jevil Then answer.\tok"
    assert sanitize("line one\nline two") == "line one\nline two"


def test_sse_parser_skips_comments_and_malformed_data():
    raw = b': keepalive\n\nevent: reasoning\ndata: {"text": "a"}\n\nevent: x\ndata: not json\n\n'
    assert list(sse_events(iter(raw.splitlines(keepends=True)))) == [("reasoning", {"text": "a"})]


def _tail(server, *extra: str) -> tuple[int, str]:
    argv = ["tail", "--execution", "run-t", "--url", server.url, "--until-done", "--timeout", "10", *extra]
    args = build_parser().parse_args(argv)
    assert args.func is run
    out = io.StringIO()
    return run(args, out), out.getvalue()


def test_tail_prints_the_live_reasoning_and_the_record(hub, store, journal_dir, serve):
    sim = Simulator(reasoning_text=HOSTILE, stream_chunks=4)
    config = ReasoningConfig(store=store, journal=journal_dir, live=True, on_reasoning=hub)
    server = serve(create_app(hub, store=store, source=journal_dir, authenticator=authenticator(), keepalive=0.2))
    with instrumented(AnthropicInstrumentor(), config=config), execution("run-t", principal="alice"), step("p"):
        with sim.anthropic_client().messages.stream(**anthropic_request()) as stream:
            events = iter(stream)
            while getattr(next(events), "type", None) != "content_block_delta":
                pass
            assert flush_live()
            result: list[tuple[int, str]] = []
            follower = threading.Thread(target=lambda: result.append(_tail(server, "--token", ALICE_NO_TENANT_TOKEN)))
            follower.start()
            deadline = time.monotonic() + 10
            while not hub.viewers("run-t") and time.monotonic() < deadline:
                time.sleep(0.01)
            list(events)
        follower.join(10)
    ((code, printed),) = result
    assert code == 0
    assert "--- step p block 0 (catching up) ---" in printed and "--- step p completed (record kept) ---" in printed
    assert sanitize(HOSTILE) in printed.replace("\n", "").replace("--- step p block 0 (catching up) ---", "")
    assert "\x1b" not in printed and "\u202e" not in printed

    code, printed = _tail(server, "--token", ALICE_NO_TENANT_TOKEN)
    assert code == 0 and "--- step p: captured record ---" in printed and "[summary ok]" in printed

    code, printed = _tail(server, "--token", "mallory-acme-token-03")
    assert code == 1 and printed == ""

    # A reader that went away is not an unreachable live view: it reaches main(), which exits quietly.
    argv = ["tail", "--execution", "run-t", "--url", server.url, "--until-done", "--token", ALICE_NO_TENANT_TOKEN]
    with pytest.raises(BrokenPipeError):
        run(build_parser().parse_args(argv), ClosedPipe())


class ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_tail_unreachable(capsys):
    code = main(["tail", "--execution", "x", "--url", "http://127.0.0.1:9", "--timeout", "2"])
    assert code == 2 and "cannot reach" in capsys.readouterr().err


def test_tail_at_a_viewer_says_it_is_the_viewer_not_a_live_view(tmp_path, serve, capsys):
    """Issue 43: `tail --url` at `loom-otel serve`'s viewer names what is there, not 'no execution'."""
    from loom_otel.core import FileReasoningStore
    from loom_otel.viewer import create_app as viewer_app
    from loom_otel.viewer import tokens_file_authenticator

    (tmp_path / "journal").mkdir()
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[tokens]\nalice = "alice-secret-token-0000"\n')
    app = viewer_app(
        tmp_path / "journal",
        FileReasoningStore(tmp_path / "store"),
        authenticator=tokens_file_authenticator(tokens),
        reads_journal=tmp_path / "reads",
    )
    server = serve(app)
    argv = [
        "tail",
        "--execution",
        "run-t",
        "--url",
        server.url,
        "--timeout",
        "10",
        "--token",
        "alice-secret-token-0000",
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no execution" not in err
    assert "is loom-otel's reasoning viewer (loom-otel serve), not a live view" in err
    assert f"{server.url}/executions/run-t" in err


def test_tail_at_some_other_server_names_its_answer(serve, capsys):
    from starlette.applications import Starlette

    server = serve(Starlette())  # answers every path with a plain-text 404
    assert main(["tail", "--execution", "run-t", "--url", server.url, "--timeout", "10"]) == 2
    err = capsys.readouterr().err
    assert "is not a loom-otel live view" in err and "HTTP 404 (text/plain" in err and "no execution" not in err
