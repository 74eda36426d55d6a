"""Shared pieces of the Gemini continuation tests: the tool loop, history surgery, expected positions."""

from __future__ import annotations

import base64
from typing import Any

from google.genai import types

from loom_otel.testing import Telemetry, reasoning_events
from loom_otel.testing.simulator import Simulator
from tests.continuation.gemini.modes import MODES

CANARY = "CANARY-gemini-continuation-3f7a"
SYSTEM = "You are a careful travel assistant."
QUESTION = "Should I pack an umbrella for Lyon tomorrow?"
NEXT = "And what about Paris?"
WEATHER = types.FunctionDeclaration(
    name="get_weather",
    description="Weather for a city.",
    parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TRAINS = types.FunctionDeclaration(
    name="find_trains",
    description="Trains between two cities.",
    parameters_json_schema={"type": "object", "properties": {"origin": {"type": "string"}}},
)


def config(system: str = SYSTEM, tools: tuple[types.FunctionDeclaration, ...] = (WEATHER,)) -> Any:
    return types.GenerateContentConfig(
        system_instruction=system,
        tools=[types.Tool(function_declarations=list(tools))],
        thinking_config=types.ThinkingConfig(include_thoughts=True),
    )


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        camel = name.split("_")[0] + "".join(w.title() for w in name.split("_")[1:])
        return obj.get(name, obj.get(camel))
    return getattr(obj, name, None)


def parts_of(content: Any) -> list[Any]:
    return list(_get(content, "parts") or ())


def calls_of(contents: list[Any]) -> list[Any]:
    return [_get(p, "function_call") for p in parts_of(contents[-1]) if _get(p, "function_call") is not None]


def answers(contents: list[Any]) -> list[types.Part]:
    """Function responses for every call of the last model step."""
    calls: list[Any] = []
    for content in reversed(contents):
        if _get(content, "role") != "model":
            break
        calls = [c for p in parts_of(content) if (c := _get(p, "function_call")) is not None] + calls
    return [types.Part.from_function_response(name=str(_get(c, "name")), response={"ok": "Rain, 14C."}) for c in calls]


def run_loop(mode: str, sim: Simulator, cfg: Any) -> tuple[list[Any], list[Any], list[Any]]:
    """One agent turn with a tool round; returns the history mid-turn (after the call), the final
    history and every response or chunk the application was handed."""
    send = MODES[mode]
    mid, seen = send(sim, [], QUESTION, cfg)
    assert calls_of(mid), "the model should have called a tool"
    final, more = send(sim, mid, answers(mid), cfg)
    return mid, final, seen + more


def signatures(items: list[Any]) -> list[str]:
    """Every signature the vendor returned, in both base64 spellings."""
    out = []
    for item in items:
        for candidate in item.candidates or ():
            for part in (candidate.content.parts if candidate.content else None) or ():
                if part.thought_signature:
                    out.append(base64.b64encode(part.thought_signature).decode())
                    out.append(base64.urlsafe_b64encode(part.thought_signature).decode())
    return out


def as_dict(content: Any, *, signatures: bool = True, thoughts: bool = True) -> dict[str, Any]:
    """A content as a framework rebuilds it: camelCase dicts, optionally without signatures/thoughts."""
    parts = []
    for part in parts_of(content):
        data = part.model_dump(mode="json", by_alias=True, exclude_none=True) if not isinstance(part, dict) else part
        if not signatures:
            data = {k: v for k, v in data.items() if k not in ("thoughtSignature", "thought_signature")}
        if not thoughts and data.get("thought"):
            continue
        parts.append(data)
    return {"role": _get(content, "role"), "parts": parts}


def reasoning_positions(contents: list[Any]) -> list[str]:
    """Where the droppable reasoning of a request sits, in transcript order: the first part of each
    thought run of a model step, and each signature not on a function call."""
    out: list[str] = []
    previous_thought = False
    previous_role = None
    for c, content in enumerate(contents):
        role = _get(content, "role")
        if role != previous_role:
            previous_thought = False
        previous_role = role
        for p, part in enumerate(parts_of(content)):
            thought = bool(_get(part, "thought"))
            run_start = thought and not previous_thought
            loose_signature = not thought and _get(part, "thought_signature") and _get(part, "function_call") is None
            if role == "model" and (run_start or loose_signature):
                out.append(f"contents.{c}.parts.{p}")
            previous_thought = thought
    return out


def call_position(contents: list[Any], rank: int = 0) -> str:
    seen = 0
    for c, content in enumerate(contents):
        for p, part in enumerate(parts_of(content)):
            if _get(content, "role") == "model" and _get(part, "function_call") is not None:
                if seen == rank:
                    return f"contents.{c}.parts.{p}"
                seen += 1
    raise LookupError(rank)


def last_call_events(telemetry: Telemetry, name: str) -> list[dict[str, Any]]:
    last = [s for s in telemetry.spans if s.name.startswith("generate_content ")][-1]
    return reasoning_events([last], name)
