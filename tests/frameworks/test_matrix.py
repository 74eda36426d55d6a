"""The framework matrix (issues #11, #48): real LangChain + LangGraph, pydantic-ai, google-adk, LlamaIndex,
OpenAI Agents SDK, AutoGen AgentChat, Strands and CrewAI agents, ordinary scripts that never import loom_otel
(tests/frameworks/apps; but AutoGen's ``execution`` variants and CrewAI's ``both-execution``, which name their
conversation with ``execution()``: a user's one-line choice), each in its own venv (.ci/frameworks.sh), run in
subprocesses under ``opentelemetry-instrument`` against the strict simulator over HTTP, Anthropic, Gemini,
OpenAI Responses (the Agents SDK, run and streamed), Chat Completions (AutoGen's OpenAI client) and Bedrock
Converse (Strands' default model), transcript ``keep`` and ``redact``: three tool rounds, then
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
    "strands": ("anthropic", "bedrock"),
    "crewai": ("anthropic", "gemini"),
}
CREW_VARIANTS = {"anthropic": ("tools", "both", "both-execution"), "gemini": ("both",)}
"""A CrewAI crew (tests/frameworks/apps/crewai_agent.py) has no per-turn system prompt: ``tools`` has
thinking on the tool-less agent only, ``both`` on both agents (refused bare on Anthropic: CrewAI strips
the researcher's thinking from its tool-use turn), ``both-execution`` the same inside ``execution()``."""
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
NO_DROP = {"adk", "strands"}
"""Frameworks whose Anthropic model cannot be made to send ``thinking.block_binding``: google-adk's
AnthropicLlm has no way; Strands sets it itself, only after the vendor refused a stale block."""


def _cases() -> list[Case]:
    cases = []
    for framework, vendors in VENDORS.items():
        for vendor in vendors:
            if framework == "crewai":
                cases.extend(Case(framework, vendor, variant) for variant in CREW_VARIANTS[vendor])
                continue
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
    variants: tuple[str, ...] | None = None,
    frameworks: Collection[str] = VENDORS.keys(),
) -> list[object]:
    params = []
    for case in _cases():
        if (variants is not None and case.variant not in variants) or case.framework not in frameworks:
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
    """The journal holds one execution per conversation, and ``loom-otel audit show`` reads each whole
    from it. A crew has one conversation per agent and task (CrewAI reruns a failed task from its start:
    a new one), each its own execution under zero code; inside ``execution()`` the app names one."""
    run = instrumented(case, mode)
    assert run.journal, "nothing journaled"
    executions = {record.execution_id for record in run.journal}
    conversations = 1
    if case.framework == "crewai" and case.variant != "both-execution":
        conversations = sum(1 for call in run.calls if call.status == 200 and call.texts and call.fresh)
    assert len(executions) == conversations, f"{len(executions)} executions for {len(run.journal)} calls"
    assert run.store is not None and run.journal_dir is not None
    steps = []
    for execution_id in sorted(executions):
        command = ["audit", "show", "--execution", execution_id, "--journal", str(run.journal_dir), "--json"]
        shown = subprocess.run(
            [sys.executable, "-m", "loom_otel.cli", *command, "--store", run.store],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert shown.returncode == 0, shown.stderr
        steps.extend(json.loads(shown.stdout)["steps"])
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


@pytest.mark.parametrize(("case", "mode"), [p for p in _params("framework-spans") if "strands" in str(p.id)])
def test_the_frameworks_own_spans_carry_the_reasoning_scrubbed(case: Case, mode: str) -> None:
    """Strands' own tracer puts each model answer on its spans (``gen_ai.choice``, on the model call's
    span and its cycle's), reasoning blocks included: each arrives with loom-otel's reference in place of
    its signature (and of its text in keep mode; redact mode's app never held it), so the leak check
    above covers the framework's spans too."""
    run = instrumented(case, mode)
    marker = "[loom-otel reasoning signature ref="
    answers = [str(event.get("message")) for event in run.span_events("gen_ai.choice")]
    scrubbed = [a for a in answers if "reasoningContent" in a and marker in a]
    reasoning_calls = sum(1 for call in run.calls if call.status == 200 and call.texts)
    assert reasoning_calls and len(scrubbed) >= reasoning_calls


def _crew(variant: str) -> list[object]:
    case = Case("crewai", "anthropic", variant)
    return [pytest.param(case, mode, id=f"{case.id}-{mode}") for mode in MODES]


@pytest.mark.parametrize(("case", "mode"), _crew("both-execution"))
def test_crewai_stripped_tool_round_is_restored_inside_execution(case: Case, mode: str) -> None:
    """Issue 48: CrewAI resends the researcher's tool-use turn without its thinking block; the vendor
    refuses it bare. Inside ``execution()`` loom-otel puts the block back and the crew answers; the
    discard warning names the framework and what was restored."""
    alone = bare(case)
    run = instrumented(case, mode)
    assert not alone.ok and alone.error is not None and "Expected `thinking`" in alone.error
    assert run.ok, run.error
    assert len(run.answers) == 2
    assert "by 'crewai'" in run.stderr and "restored" in run.stderr


@pytest.mark.parametrize(("case", "mode"), _crew("both"))
def test_crewai_stripped_tool_round_without_execution_fails_as_bare(case: Case, mode: str) -> None:
    """Zero code: the request goes out as CrewAI built it and is refused as bare (nothing from another
    conversation is put back). Each of CrewAI's three attempts fails at its first stripped turn: the discard
    warning comes at that turn (the vendor refuses a tool round without its thinking), naming CrewAI."""
    alone = bare(case)
    run = instrumented(case, mode)
    assert not alone.ok and not run.ok
    assert run.error == alone.error
    assert "restored" not in run.stderr
    assert "by 'crewai'" in run.stderr and "tool-use turn" in run.stderr and "execution()" in run.stderr


@pytest.mark.parametrize(
    ("case", "mode"),
    [pytest.param(Case("autogen", "anthropic", "tools"), mode, id=f"autogen-anthropic-tools-{mode}") for mode in MODES],
)
def test_autogen_stripped_tool_round_without_execution_is_warned_at_once(case: Case, mode: str) -> None:
    """Zero code: AutoGen resends the thought as a text block, the vendor refuses the round as bare; the
    discard warning comes at that first refused request, naming AutoGen's package."""
    alone = bare(case)
    run = instrumented(case, mode)
    assert not alone.ok and not run.ok
    assert run.error == alone.error
    assert "by 'autogen_ext'" in run.stderr and "tool-use turn" in run.stderr
