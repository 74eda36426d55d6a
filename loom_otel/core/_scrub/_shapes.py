"""Reasoning *shapes* in JSON values, replaced whether or not loom-otel captured what they hold.

A JSON value (the conventions' ``gen_ai.*.messages``, OpenInference's ``input.value`` /
``output.value``) is read and every reasoning part in it (``{"type": "reasoning"}``, Anthropic
``thinking`` / ``redacted_thinking`` blocks, Gemini ``thought`` parts and thought signatures, OpenAI
reasoning items and ``reasoning_content``) has its text and signature replaced. A value cut by an
attribute length limit (``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``) no longer parses: it is completed
(open string and containers closed) and read the same way.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from loom_otel.core._scrub._registry import REMOVED, registry
from loom_otel.core._scrub._visible import is_reasoning_part

__all__ = ["is_marker", "may_hold_reasoning", "replacement", "scrub_json", "walk"]

_TEXT_TYPES: Final = frozenset({"reasoning", "thinking"})
_SIGNATURE_KEYS: Final = frozenset({"signature", "thought_signature", "thoughtSignature", "encrypted_content", "data"})
_TOKEN: Final = re.compile(r'"(?:[^"\\]|\\.)*(")?|[\[\]{}]', re.S)
_PARTIAL_ESCAPE: Final = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?$")
_OPENERS: Final = {"{": "}", "[": "]"}
_CLOSERS: Final = frozenset(_OPENERS.values())
_PARTIAL_LITERAL: Final = re.compile(r"[\w.+-]+$")


def is_marker(value: str) -> bool:
    return value.startswith("[loom-otel ") or value == REMOVED


def replacement(value: str) -> str:
    """What a reasoning text or signature becomes: its reference marker, else the removal marker."""
    if is_marker(value):
        return value
    return registry.get(value) or REMOVED


def _scrub_part(node: dict[str, Any]) -> bool:
    """Replace the text and signature fields of one reasoning-shaped JSON object; True when it was one."""
    kind = node.get("type")
    changed = False
    if kind in _TEXT_TYPES or node.get("thought") is True:
        for key in ("content", "thinking", "text"):
            value = node.get(key)
            if isinstance(value, str) and value:
                node[key] = replacement(value)
                changed = True
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"]:
                        item["text"] = replacement(item["text"])
                        changed = True
        summary = node.get("summary")
        if isinstance(summary, list):
            for item in summary:
                if isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"]:
                    item["text"] = replacement(item["text"])
                    changed = True
    if is_reasoning_part(node):
        for key in _SIGNATURE_KEYS:
            value = node.get(key)
            if isinstance(value, str) and value:
                node[key] = replacement(value)
                changed = True
    return changed


def walk(node: Any) -> bool:
    """Replace every reasoning shape in a parsed JSON tree, in place; True when one was found."""
    changed = False
    if isinstance(node, dict):
        changed = _scrub_part(node)
        for key in ("thought_signature", "thoughtSignature", "reasoning_signature", "reasoning_content"):
            value = node.get(key)
            if isinstance(value, str) and value and not is_marker(value):
                node[key] = replacement(value)
                changed = True
        if "role" in node and isinstance(node.get("reasoning"), str) and node["reasoning"]:
            node["reasoning"] = replacement(node["reasoning"])
            changed = True
        for value in node.values():
            if isinstance(value, dict | list):
                changed = walk(value) or changed
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, dict | list):
                changed = walk(item) or changed
    return changed


def may_hold_reasoning(value: str) -> bool:
    """Whether a JSON text can hold a reasoning shape: every name and type ``walk`` reads contains
    ``reasoning``, ``thinking`` or ``thought``, and a JSON text writes them as they are unless it escapes
    letters (``\\u``), which is then read in full. Most JSON values (a request's messages, tool calls)
    are not parsed at all."""
    return "reasoning" in value or "thinking" in value or "thought" in value or "\\u" in value


def scrub_json(value: str) -> str:
    """``value`` with its reasoning shapes replaced (a value cut short is completed first)."""
    try:
        tree = json.loads(value)
    except ValueError:
        completed = _complete(value)
        if completed is None:
            return value
        try:
            tree = json.loads(completed)
        except ValueError:
            return value
    if walk(tree):
        return json.dumps(tree, ensure_ascii=False, separators=(",", ":"))
    return value


def _complete(value: str) -> str | None:
    """A JSON text cut short, with its open string and containers closed (``None``: not such a text)."""
    closers: list[str] = []
    last: re.Match[str] | None = None
    for match in _TOKEN.finditer(value):
        token = match.group()
        if token in _OPENERS:
            closers.append(_OPENERS[token])
        elif token in _CLOSERS and (not closers or closers.pop() != token):
            return None
        last = match
    if not closers:
        return None
    text = value
    if last is not None and last.group().startswith('"') and last.group(1) is None:
        text = _PARTIAL_ESCAPE.sub("", value[: last.end()]) + '"'
        before = value[: last.start()].rstrip()
        if closers[-1] == "}" and before.endswith(("{", ",")):
            text += ":null"  # a key cut short
    elif last is not None and last.group().startswith('"') and not value[last.end() :].strip():
        if closers[-1] == "}" and value[: last.start()].rstrip().endswith(("{", ",")):
            text += ":null"  # a key with no value yet
    else:
        text = _PARTIAL_LITERAL.sub("", text.rstrip()).rstrip()
        if text.endswith(","):
            text = text[:-1]
        elif text.endswith(":"):
            text += "null"
    return text + "".join(reversed(closers))
