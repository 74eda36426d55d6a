"""The framework matrix (issue #11): real LangChain + LangGraph, pydantic-ai, google-adk, LlamaIndex, OpenAI Agents SDK
and AutoGen AgentChat agents,
ordinary scripts that never import loom_otel (tests/frameworks/apps; but AutoGen's ``execution`` variant,
which names its conversation with ``execution()``: a user's one-line choice), each in its own venv
(.ci/frameworks.sh), run in subprocesses under ``opentelemetry-instrument`` against the strict
simulator over HTTP, Anthropic, Gemini, OpenAI Responses (the Agents SDK, run and streamed) and Chat
Completions (AutoGen's OpenAI client), transcript ``keep`` and ``redact``: three tool rounds, then
a follow-up message in the same conversation; with one system prompt, one per turn and one per model
call, with and without the vendor's server-side drops (Anthropic ``thinking.block_binding``).

Each check is its own test so a known bug marks only what it breaks (strict xfail: the lead flips it
when the fix lands): the final answers equal the bare run's wherever the bare run works; one
``loom.reasoning.captured`` per reasoning call with digests equal to that call's text; one execution
per conversation (the journal); no reasoning text or signature in the exported spans or the journal.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Collection

import pytest

from loom_otel.audit import verify
from loom_otel.testing import find_leaks

from .harness import Case, bare, instrumented

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("framework_venv")]

VENDORS = {
    "langchain": ("anthropic",),
    "pydantic-ai": ("anthropic", "gemini"),
    "adk": ("anthropic", "gemini"),
    "llamaindex": ("anthropic",),
    "openai-agents": ("openai",),
    "autogen": ("anthropic", "openai"),
}
MODES = ("keep", "redact")
VARIANTS = {
    "llamaindex": ("system-turn",),
    "openai-agents": ("streamed", "system-turn", "system-call"),
    "autogen": ("execution", "execution-streamed"),
}
"""The variants beside ``tools`` a framework runs (default the two system ones): a LlamaIndex agent's
``system_prompt`` is read at each run, with no hook per model call; the Agents SDK streams with
``Runner.run_streamed`` (through ``responses.with_streaming_response``); the AutoGen app names its
conversation with ``execution()``, its model calls streamed or not (its one system prompt is set when the
agent is built)."""
NO_DROP = {"adk"}
"""Frameworks whose Anthropic model has no way to send ``thinking.block_binding`` (google-adk's AnthropicLlm)."""


def _cases() -> list[Case]:
    cases = []
    for framework, vendors in VENDORS.items():
        for vendor in vendors:
            cases.append(Case(framework, vendor, "tools"))
            for variant in VARIANTS.get(framework, ("system-turn", "system-call")):
                cases.append(Case(framework, vendor, variant))
                if vendor == "anthropic" and framework not in NO_DROP and variant.startswith("system-"):
                    cases.append(Case(framework, vendor, variant, drop=True))
    return cases


def _known() -> dict[tuple[str, str, str], str]:
    """(check, case id, mode) -> why that check is expected to fail. Issue #11's items 1-4 hold in every
    case now (their strict xfails passed and were removed); a new known failure goes here with its reason."""
    return {}


KNOWN = _known()
"""(check, case id, mode) -> the issue #11 item that makes exactly that check fail today."""


def _params(
    check: str,
    variants: tuple[str, ...] = ("tools", "streamed", "system-turn", "system-call", "execution", "execution-streamed"),
    frameworks: Collection[str] = VENDORS.keys(),
) -> list[object]:
    params = []
    for case in _cases():
        if case.variant not in variants or case.framework not in frameworks:
            continue
        for mode in MODES:
            reason = KNOWN.get((check, case.id, mode))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(case, mode, id=f"{case.id}-{mode}", marks=marks))
    return params


@pytest.mark.parametrize(("case", "mode"), _params("answers"))
def test_same_answers_as_bare(case: Case, mode: str) -> None:
    alone = bare(case)
    run = instrumented(case, mode)
    if alone.ok:
        assert run.ok, f"bare works, instrumented fails: {run.error}"
        assert run.answers == alone.answers
    # where the bare app fails, loom-otel may only turn the failure into a success
    if run.ok:
        assert len(run.answers) == 2


@pytest.mark.parametrize(("case", "mode"), _params("events"))
def test_one_event_per_reasoning_call_with_its_digests(case: Case, mode: str) -> None:
    run = instrumented(case, mode)
    expected = sorted(call.digests for call in run.calls if call.status == 200 and call.texts)
    assert expected, "the simulator returned no reasoning"
    captured = sorted(tuple(d for d in record.digests if d) for record in run.captures)
    assert captured == expected
    assert sorted(tuple(d for d in record.digests if d) for record in run.journal) == expected


@pytest.mark.parametrize(("case", "mode"), _params("executions"))
def test_one_execution_per_conversation(case: Case, mode: str) -> None:
    """The journal holds one execution, and ``loom-otel audit show`` reads the whole conversation from it."""
    run = instrumented(case, mode)
    assert run.journal, "nothing journaled"
    executions = {record.execution_id for record in run.journal}
    assert len(executions) == 1, f"{len(executions)} executions for one conversation of {len(run.journal)} calls"
    assert run.store is not None and run.journal_dir is not None
    command = ["audit", "show", "--execution", executions.pop(), "--journal", str(run.journal_dir), "--json"]
    shown = subprocess.run(
        [sys.executable, "-m", "loom_otel.cli", *command, "--store", run.store],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    steps = json.loads(shown.stdout)["steps"]
    assert len(steps) == len(run.journal)
    assert {p["status"] for s in steps for a in s["attempts"] for p in a["parts"]} == {"ok"}


@pytest.mark.parametrize(("case", "mode"), _params("leaks"))
def test_no_reasoning_text_or_signature_exported_or_journaled(case: Case, mode: str) -> None:
    run = instrumented(case, mode)
    assert run.exported is not None and run.exported.is_file(), "no span was exported"
    assert run.secrets(), "the simulator returned no reasoning"
    assert find_leaks(run.secrets(), directories=[run.journal_dir], texts=[run.exported.read_text()]) == []


RESTORED = {
    *((f"autogen-anthropic-{variant}", mode) for variant in ("execution", "execution-streamed") for mode in MODES),
    *((f"autogen-openai-{variant}", "redact") for variant in ("execution", "execution-streamed")),
}
"""Where AutoGen's agent, refused bare, works instrumented: inside ``execution()`` its Anthropic tool rounds
get back the thinking block AutoGen resent as text, and (redact mode) a DeepSeek-style endpoint gets back
the ``reasoning_content`` AutoGen's OpenAI client does not send (the app never held it); keep mode does not
put back what the app held and dropped, and without ``execution()`` nothing is restored."""


@pytest.mark.parametrize(("case", "mode"), _params("restored", frameworks={"autogen"}))
def test_autogen_refused_bare_works_inside_execution(case: Case, mode: str) -> None:
    """Issue 48: AutoGen 0.7 resends the thought as a text block (Anthropic) and no ``reasoning_content``
    (OpenAI client); both are refused bare with the vendor's 400. Where loom-otel restores the round
    (only inside the ``execution()`` the app names) the agent works; elsewhere it fails as bare."""
    alone = bare(case)
    assert not alone.ok and alone.error is not None and "Error code: 400" in alone.error
    run = instrumented(case, mode)
    if (case.id, mode) in RESTORED:
        assert run.ok, run.error
        assert len(run.answers) == 2 and all(run.answers)
    else:
        assert run.error == alone.error


HOLDS = {"llamaindex", "openai-agents"}
"""The apps that report the history they hold at the end (``run(turn, held=...)``)."""


@pytest.mark.parametrize(("case", "mode"), _params("held", frameworks=HOLDS))
def test_redact_mode_hands_the_app_no_reasoning_text(case: Case, mode: str) -> None:
    """Issue 48: ``Runner.run_streamed`` goes through ``with_streaming_response``, and redact mode handed
    the app every reasoning summary; in keep mode the app holds them (so the check can fail)."""
    run = instrumented(case, mode)
    assert run.ok and run.held is not None, run.error
    texts = [text for call in run.calls for text in call.texts if text]
    assert texts, "the simulator returned no reasoning"
    held = [text for text in texts if text in run.held or json.dumps(text)[1:-1] in run.held]
    assert held == ([] if mode == "redact" else texts)


@pytest.mark.parametrize(("case", "mode"), _params("drops", variants=("tools", "streamed")))
def test_no_drop_where_nothing_was_edited(case: Case, mode: str) -> None:
    """One system prompt, the history as the framework keeps it: no block is stale, none is dropped."""
    run = instrumented(case, mode)
    assert run.span_events("loom.reasoning.dropped") == []


@pytest.mark.parametrize(("case", "mode"), _params("once"))
def test_every_record_reaches_the_collector_once(case: Case, mode: str) -> None:
    """Issue #27 point 2: the agent ends while the batch span processor still holds spans; the span
    pipeline is flushed before anything owed is resent, so the receiver gets each journal record once
    (1 to 7 of a run's 8-12 capture records arrived twice before) and none is lost."""
    run = instrumented(case, mode)
    assert run.exported is not None and run.exported.is_file() and run.journal_dir is not None
    received = {o.origin: o for o in verify(run.exported).origins}
    written = {o.origin: o for o in verify(run.journal_dir).origins}
    assert received.keys() == written.keys() and received
    for origin, chain in received.items():
        assert (chain.duplicates_identical, chain.duplicates_conflicting) == (0, ())
        assert (chain.records, chain.gaps) == (written[origin].records, ())
