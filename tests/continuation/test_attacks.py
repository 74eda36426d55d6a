"""Lineage attacked (DESIGN "Execution identity"): a call joins an execution only through a reasoning block
that carries a vendor secret and whose recorded binding holds in the request as it will be sent; text is
put back only into a block that binds, never across tenants or principals; no SDK object the application
receives carries text it did not send. Each test plays the attacker through the real SDKs against the
strict simulator: replay, guess, fork, restart, cross-tenant, cross-principal. Each call is its own
trace, as under ``opentelemetry-instrument`` without a framework span."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google.genai import errors

from loom_otel.core import LoomOtelWarning, MemoryReasoningStore, ReasoningConfig, execution
from loom_otel.core._continuation._bindings import forget_bindings
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES
from tests.continuation.gemini.modes import MODES as GEMINI_MODES
from tests.continuation.gemini.scenario import QUESTION, answers, as_dict, config, signatures
from tests.continuation.openai.test_openai_continuation import MODES as OPENAI_MODES
from tests.continuation.openai.test_openai_continuation import (
    RESPONSES_TOOL,
    TOOL,
    chat_loop,
    chat_send,
    responses_send,
)
from tests.support.anthropic_sdk import assistant_turn
from tests.support.tools import WEATHER

CANARY = "CANARY-attack-5e21"
GUESS = "My own notes on the walk."
KW: dict[str, Any] = {
    "model": "claude-sonnet-5-5",
    "max_tokens": 4096,
    "thinking": {"type": "adaptive"},
    "tools": [WEATHER],
}
DROP_BLOCK = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
VICTIM_QUESTION = "Plan a rainy-day walk in Lyon."
ATTACKER_QUESTION = "Plan a sunny walk in Nice."


def _simulator(max_tool_rounds: int = 1) -> Simulator:
    return Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=max_tool_rounds)


def _executions(spans: Any) -> list[str]:
    """The execution of every model call, in the order the calls started."""
    calls = sorted((s for s in spans if "loom.execution.id" in (s.attributes or {})), key=lambda s: s.start_time)
    return [str(s.attributes["loom.execution.id"]) for s in calls]


def _reachable(exc: BaseException) -> list[str]:
    """Everything the application can read off an SDK error."""
    out = [str(exc), repr(exc.args), json.dumps(getattr(exc, "body", None), default=str)]
    request = getattr(exc, "request", None)
    if request is not None:
        out += [request.content.decode(errors="replace"), b"".join(request.stream).decode(errors="replace")]
    response = getattr(exc, "response", None)
    if response is not None:
        out.append(response.text)
    return out


def _send(send: Callable[[Simulator, dict[str, Any]], Any], sim: Simulator, kw: dict[str, Any]) -> list[str]:
    """One request; what the application can read off the vendor's refusal, if it refused."""
    try:
        send(sim, kw)
    except anthropic.BadRequestError as exc:
        return _reachable(exc)
    return []


def _tool_round(send: Callable[[Simulator, dict[str, Any]], Any], sim: Simulator, **kw: Any) -> list[Any]:
    """The victim's first call: question, then its answer (thinking and a tool call) and the tool result."""
    history: list[Any] = [{"role": "user", "content": VICTIM_QUESTION}]
    first = send(sim, {**KW, **kw, "messages": history})
    call = next(b for b in first.content if b.type == "tool_use")
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "rain"}]}
    return [*history, assistant_turn(first), result]


def _field(block: Any, name: str) -> Any:
    return block.get(name) if isinstance(block, dict) else getattr(block, name, None)


def _with_text(message: dict[str, Any], text: str) -> dict[str, Any]:
    """The assistant message with its thinking text replaced (the attacker's guess)."""
    content = [
        {"type": "thinking", "thinking": text, "signature": _field(block, "signature")}
        if _field(block, "type") == "thinking"
        else block
        for block in message["content"]
    ]
    return {**message, "content": content}


# --- replay and fork: a victim's block under another prefix --------------------------------------------


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", list(MODES))
def test_a_replayed_block_under_another_prefix_joins_nothing(mode: str, transcript: str, tmp_path: Path) -> None:
    """The victim's finished turn (thinking and answer) replayed after another question: its binding does
    not hold, so the attacker's call is its own execution and gets no text (keep mode: its own guess)."""
    sim = _simulator()
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript=transcript)
    send = MODES[mode]
    with instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        history = _tool_round(send, sim)
        final = assistant_turn(send(sim, {**KW, "messages": history}))
        stolen = _with_text(final, GUESS) if transcript == "keep" else final
        attack = [
            {"role": "user", "content": ATTACKER_QUESTION},
            stolen,
            {"role": "user", "content": "Thanks. And tomorrow?"},
        ]
        reachable = _send(send, sim, {**KW, "messages": attack})
    victim, attacker = _executions(telemetry.spans)[0], _executions(telemetry.spans)[-1]
    assert attacker != victim
    assert CANARY not in json.dumps(sim.requests[-1].body)
    assert find_leaks([CANARY], texts=reachable) == []


@pytest.mark.parametrize("thinking", ["adaptive", "drop_block"])
@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", list(MODES))
def test_a_tool_round_forked_onto_another_prefix_gets_no_text(
    mode: str, transcript: str, thinking: str, tmp_path: Path
) -> None:
    """An in-flight tool round (its thinking block is never dropped) or a request asking the vendor to drop
    stale blocks: the block goes out as the attacker holds it. No join, no stored text put back, and in
    keep mode the attacker's own text is left as sent; a refusal carries none of the victim's text."""
    sim = _simulator()
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript=transcript)
    send = MODES[mode]
    extra = {"thinking": DROP_BLOCK} if thinking == "drop_block" else {}
    with instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        history = _tool_round(send, sim, **extra)
        stolen = _with_text(history[1], GUESS) if transcript == "keep" else history[1]
        attack = [{"role": "user", "content": ATTACKER_QUESTION}, stolen, history[2]]
        reachable = _send(send, sim, {**KW, **extra, "messages": attack})
    victim, attacker = _executions(telemetry.spans)[0], _executions(telemetry.spans)[-1]
    assert attacker != victim
    sent = json.dumps(sim.requests[-1].body)
    assert CANARY not in sent
    if transcript == "keep":
        assert GUESS in sent
    assert find_leaks([CANARY], texts=reachable) == []
    assert reasoning_events(telemetry.spans, "loom.reasoning.restored") == []


# --- guess: visible text and ids join nothing (OpenAI) --------------------------------------------------


@pytest.mark.parametrize("mode", OPENAI_MODES)
def test_a_guessed_chat_answer_joins_nothing(mode: str, tmp_path: Path) -> None:
    """Chat Completions issues no secret: an assistant message equal to the victim's (same question, same
    answer, or guessed) after another question gets neither the victim's execution nor its reasoning."""
    sim = _simulator()
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    kw: dict[str, Any] = {"model": "deepseek-reasoner", "tools": [TOOL]}
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        victim = chat_loop(mode, sim, [])
        guessed = [{"role": "user", "content": "Should I pack an umbrella for Paris?"}, *victim[1:]]
        with pytest.raises(openai.BadRequestError) as refused:  # DeepSeek: reasoning_content is missing
            chat_send(mode, sim, {**kw, "messages": guessed}, [])
    executions = _executions(telemetry.spans)
    assert executions[-1] != executions[0]
    assert CANARY not in json.dumps(sim.requests[-1].body)
    assert find_leaks([CANARY], texts=_reachable(refused.value)) == []


def _strip_encrypted(sim: Simulator, asynchronous: bool) -> Any:
    """A client whose vendor returns no ``encrypted_content`` (``store=True`` without ``include``)."""
    inner = sim.transport()

    def handler(request: httpx2.Request) -> httpx2.Response:
        response = inner.handle_request(request)
        body = re.sub(rb'"encrypted_content":\s*"[^"]*"', b'"encrypted_content":null', response.read())
        headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
        return httpx2.Response(response.status_code, headers=headers, content=body, request=request)

    transport = httpx2.MockTransport(handler)
    if asynchronous:
        return sim.async_openai_client(http_client=httpx2.AsyncClient(transport=transport))
    return sim.openai_client(http_client=httpx2.Client(transport=transport))


def _responses(mode: str, client: Any, kw: dict[str, Any]) -> Any:
    """One Responses request through ``client``; the final ``Response``."""
    if mode == "sync":
        return client.responses.create(**kw)
    if mode == "stream":
        return list(client.responses.create(stream=True, **kw))[-1].response

    async def go() -> Any:
        if mode == "async":
            return await client.responses.create(**kw)
        return [e async for e in await client.responses.create(stream=True, **kw)][-1].response

    return asyncio.run(go())


_RESPONSES_KW: dict[str, Any] = {
    "model": "o5",
    "tools": [RESPONSES_TOOL],
    "reasoning": {"effort": "high", "summary": "auto"},
}


@pytest.mark.parametrize("mode", OPENAI_MODES)
def test_a_replayed_reasoning_item_id_joins_nothing(mode: str, tmp_path: Path) -> None:
    """A Responses reasoning item without ``encrypted_content`` is joined by nothing: its id (which other
    instrumentations export) replayed after another question gets neither execution nor summary."""
    sim = _simulator()
    client = _strip_encrypted(sim, mode.startswith("async"))
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        victim = _responses(mode, client, {**_RESPONSES_KW, "input": VICTIM_QUESTION})
        item = next(o for o in victim.output if o.type == "reasoning")
        assert item.encrypted_content is None and item.id
        replayed = {"type": "reasoning", "id": item.id, "summary": [{"type": "summary_text", "text": ""}]}
        attack = [{"role": "user", "content": ATTACKER_QUESTION}, replayed]
        _responses(mode, client, {**_RESPONSES_KW, "input": attack})
    executions = _executions(telemetry.spans)
    assert executions[-1] != executions[0]
    assert CANARY not in json.dumps(sim.requests[-1].body)


@pytest.mark.parametrize("mode", OPENAI_MODES)
def test_replayed_encrypted_content_under_another_prefix_joins_nothing(mode: str, tmp_path: Path) -> None:
    """The vendor's secret alone is not enough: its recorded binding (model, instructions, tools and the
    input before it) must hold, else the vendor removes it and loom-otel neither joins nor reads."""
    sim = _simulator()
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    kw = {**_RESPONSES_KW, "include": ["reasoning.encrypted_content"], "store": False}
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        victim = responses_send(mode, sim, {**kw, "input": [{"role": "user", "content": VICTIM_QUESTION}]}, [])
        items = [o.model_dump(exclude_none=True) for o in victim.output]
        call = next(i for i in items if i["type"] == "function_call")
        output = {"type": "function_call_output", "call_id": call["call_id"], "output": "Rain, 14C."}
        attack = [{"role": "user", "content": ATTACKER_QUESTION}, *items, output]
        response = responses_send(mode, sim, {**kw, "input": attack}, [])
    assert [t.reason for t in response.input_transformations] == ["prefix_mismatch"]  # the vendor's own verdict
    executions = _executions(telemetry.spans)
    assert executions[-1] != executions[0]
    assert CANARY not in json.dumps(sim.requests[-1].body)


def test_a_responses_conversation_is_still_one_execution(tmp_path: Path) -> None:
    """The positive case: a tool loop sending back what the vendor returned joins through
    ``encrypted_content`` (no ``execution()``), and redact mode puts the summaries back."""
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=2)
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    kw = {**_RESPONSES_KW, "include": ["reasoning.encrypted_content"], "store": False}
    items: list[Any] = [{"role": "user", "content": VICTIM_QUESTION}]
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        for _ in range(3):
            response = responses_send("sync", sim, {**kw, "input": list(items)}, [])
            items += [o.model_dump(exclude_none=True) for o in response.output]
            calls = [o for o in response.output if o.type == "function_call"]
            if not calls:
                break
            items.append({"type": "function_call_output", "call_id": calls[0].call_id, "output": "Rain, 14C."})
    assert len(set(_executions(telemetry.spans))) == 1
    assert not response.input_transformations
    assert CANARY in json.dumps(sim.requests[-1].body)  # the vendor got the summaries back
    assert find_leaks([CANARY], texts=[json.dumps(items)], spans=telemetry.spans) == []


# --- restart: a named execution is never joined from outside it -----------------------------------------


@pytest.mark.parametrize("mode", ["sync", "stream", "async_messages.stream"])
def test_a_restarted_process_never_writes_into_a_named_execution(mode: str, tmp_path: Path) -> None:
    """A second process (instrumented anew, its binding records read from the files) continuing a
    conversation an ``execution()`` named, without one: its capture is its own execution, so reading or
    erasing the victim's reaches nothing of the second process's."""
    sim = _simulator()
    store = MemoryReasoningStore()
    settings = ReasoningConfig(store=store, journal=tmp_path / "j")
    send = MODES[mode]
    with instrumented(AnthropicInstrumentor(), config=settings) as first, execution("victim-run"):
        history = _tool_round(send, sim)
    forget_bindings()  # a new process: nothing in memory, the records come back from the binding files
    with instrumented(AnthropicInstrumentor(), config=settings) as second:
        send(sim, {**KW, "messages": history})
    assert [e["loom.execution.id"] for e in reasoning_events(first.spans)] == ["victim-run"]
    (captured,) = reasoning_events(second.spans)
    assert captured["loom.execution.id"] != "victim-run"
    (ref,) = captured["loom.reasoning.part.ref"]
    store.erase_execution(None, "victim-run")
    assert store.get(ref, tenant=None, execution_id=str(captured["loom.execution.id"])) is not None


def test_the_same_process_still_joins_its_own_named_execution(tmp_path: Path) -> None:
    """A call that lost its ``execution()`` context (a worker thread) in the process that named it still
    continues it: the in-flight tool round is accepted and captured in that execution."""
    sim = _simulator()
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    with instrumented(AnthropicInstrumentor(), config=settings) as telemetry:
        with execution("run-1"):
            history = _tool_round(MODES["sync"], sim)
        final = MODES["sync"](sim, {**KW, "messages": history})
    assert final.stop_reason == "end_turn"
    assert {e["loom.execution.id"] for e in reasoning_events(telemetry.spans)} == {"run-1"}


# --- cross-tenant and cross-principal -------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(MODES))
def test_another_tenant_never_gets_a_stripped_round_back(mode: str, tmp_path: Path) -> None:
    """A framework that strips thinking from a tool round gets it back only in the tenant that produced it:
    another tenant sending the same transcript never gets the first tenant's signature."""
    sim = _simulator()
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j")
    omitted = {"thinking": {"type": "adaptive", "display": "omitted"}}
    send = MODES[mode]
    with instrumented(AnthropicInstrumentor(), config=settings):
        with execution("run-acme", tenant="acme"):
            history = _tool_round(send, sim, **omitted)
        content = history[1]["content"]
        signature = next(_field(b, "signature") for b in content if _field(b, "type") == "thinking")
        stripped = {**history[1], "content": [b for b in content if _field(b, "type") != "thinking"]}
        # the vendor refuses the round without its thinking: the discard warning says so at once
        with execution("run-globex", tenant="globex"), pytest.warns(LoomOtelWarning, match="tool-use turn"):
            reachable = _send(send, sim, {**KW, **omitted, "messages": [history[0], stripped, history[2]]})
    assert signature not in json.dumps(sim.requests[-1].body)
    assert find_leaks([signature], texts=reachable) == []


@pytest.mark.parametrize("mode", list(GEMINI_MODES))
def test_another_tenant_never_gets_a_gemini_call_signature_back(mode: str, tmp_path: Path) -> None:
    """A current-turn function call that lost its signature gets the recorded one back only in the tenant
    that produced it: another tenant sending the same call unsigned never gets the first one's."""
    sim = Simulator(strict=True, reasoning_text=f"Think it through. {CANARY}", max_tool_rounds=1)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j")
    send, cfg = GEMINI_MODES[mode], config()
    with instrumented(GoogleGenAiInstrumentor(), config=settings):
        with execution("run-acme", tenant="acme"):
            mid, seen = send(sim, [], QUESTION, cfg)
        unsigned = [mid[0], *(as_dict(c, signatures=False) for c in mid[1:])]
        with execution("run-globex", tenant="globex"), contextlib.suppress(errors.ClientError):
            send(sim, unsigned, answers(mid), cfg)
    secrets = signatures(seen)
    assert secrets
    assert find_leaks(secrets, texts=[json.dumps(sim.requests[-1].body)]) == []


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", list(MODES))
def test_another_principal_never_reads_a_block(mode: str, transcript: str, tmp_path: Path) -> None:
    """Two principals in one execution: bob holding alice's blocks (emptied, or altered in keep mode)
    never gets alice's text put back, and the refusal carries none of it."""
    sim = _simulator()
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript=transcript)
    send = MODES[mode]
    with instrumented(AnthropicInstrumentor(), config=settings):
        with execution("shared-run", principal="alice"):
            history = _tool_round(send, sim)
        held = _with_text(history[1], GUESS) if transcript == "keep" else history[1]
        with execution("shared-run", principal="bob"):
            reachable = _send(send, sim, {**KW, "messages": [history[0], held, history[2]]})
    assert CANARY not in json.dumps(sim.requests[-1].body)
    assert find_leaks([CANARY], texts=reachable) == []


# --- what the application receives: no text it did not send ---------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async", "stream", "messages.stream"])
def test_keep_mode_repair_never_reaches_the_application(mode: str, tmp_path: Path) -> None:
    """Keep mode puts the stored text back into a block the application altered (its binding holds);
    a 5xx raised to the application then carries the application's text, not the stored one."""
    sim = _simulator()
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j")
    send = MODES[mode]
    with instrumented(AnthropicInstrumentor(), config=settings):
        history = _tool_round(send, sim)
        repaired = [history[0], _with_text(history[1], GUESS), history[2]]
        sim.fail_next(500)
        with pytest.raises(anthropic.APIStatusError) as info:
            send(sim, {**KW, "messages": repaired})
    assert CANARY in json.dumps(sim.requests[-1].body)  # the vendor got the text the block was signed with
    assert find_leaks([CANARY], texts=_reachable(info.value)) == []


def _raw_request_texts(raw: Any) -> list[str]:
    request = raw.http_request
    return [request.content.decode(errors="replace"), b"".join(request.stream).decode(errors="replace")]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_with_raw_response_request_carries_no_text_put_back_anthropic(asynchronous: bool, tmp_path: Path) -> None:
    sim = _simulator(max_tool_rounds=2)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    with instrumented(AnthropicInstrumentor(), config=settings):
        history = _tool_round(MODES["sync"], sim)
        kw = {**KW, "messages": history}
        if asynchronous:

            async def go() -> Any:
                raw = await sim.async_anthropic_client().messages.with_raw_response.create(**kw)
                parsed = raw.parse()
                if inspect.isawaitable(parsed):  # anthropic < 1: the legacy response parses synchronously
                    await parsed
                return raw

            raw = asyncio.run(go())
        else:
            raw = sim.anthropic_client().messages.with_raw_response.create(**kw)
            raw.parse()
    assert CANARY in json.dumps(sim.requests[-1].body)  # put back for the vendor ...
    assert find_leaks([CANARY], texts=_raw_request_texts(raw)) == []  # ... not for the application


def test_a_stream_response_request_carries_no_text_put_back(tmp_path: Path) -> None:
    sim = _simulator(max_tool_rounds=2)
    settings = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    with instrumented(AnthropicInstrumentor(), config=settings):
        history = _tool_round(MODES["sync"], sim)
        with sim.anthropic_client().messages.create(stream=True, **{**KW, "messages": history}) as stream:
            list(stream)
            request = stream.response.request
        with sim.anthropic_client().messages.stream(**{**KW, "messages": history}) as helper:
            helper.get_final_message()
            helper_request = helper.response.request
    texts = [r.content.decode(errors="replace") for r in (request, helper_request)]
    assert find_leaks([CANARY], texts=texts) == []


def test_with_raw_response_request_carries_no_text_put_back_chat(tmp_path: Path) -> None:
    sim = _simulator(max_tool_rounds=2)
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    with instrumented(OpenAiInstrumentor(), config=config), execution("run-1"):
        messages = chat_loop("sync", sim, [])
        kw: dict[str, Any] = {"model": "deepseek-reasoner", "messages": messages, "tools": [TOOL]}
        raw = sim.openai_client().chat.completions.with_raw_response.create(**kw)
        raw.parse()
    assert CANARY in json.dumps(sim.requests[-1].body)
    assert find_leaks([CANARY], texts=_raw_request_texts(raw)) == []


def test_with_raw_response_request_carries_no_text_put_back_responses(tmp_path: Path) -> None:
    sim = _simulator(max_tool_rounds=2)
    config = ReasoningConfig(store=MemoryReasoningStore(), journal=tmp_path / "j", transcript="redact")
    kw = {**_RESPONSES_KW, "include": ["reasoning.encrypted_content"], "store": False}
    with instrumented(OpenAiInstrumentor(), config=config):
        first = responses_send("sync", sim, {**kw, "input": [{"role": "user", "content": VICTIM_QUESTION}]}, [])
        items: list[Any] = [{"role": "user", "content": VICTIM_QUESTION}]
        items += [o.model_dump(exclude_none=True) for o in first.output]
        call = next(i for i in items if i.get("type") == "function_call")
        items.append({"type": "function_call_output", "call_id": call["call_id"], "output": "Rain, 14C."})
        raw = sim.openai_client().responses.with_raw_response.create(**kw, input=items)
        raw.parse()
    assert CANARY in json.dumps(sim.requests[-1].body)
    assert find_leaks([CANARY], texts=_raw_request_texts(raw)) == []
