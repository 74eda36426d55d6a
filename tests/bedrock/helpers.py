"""Requests and call modes shared by the Bedrock tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

CANARY: Final = "CANARY-b3dr0ck-thinking-text"
THOUGHT: Final = f"I should check the weather first. {CANARY}"
MODEL: Final = "anthropic.claude-sonnet-4-5-20250929-v1:0"
THINKING: Final = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
WEATHER_TOOL: Final = {
    "toolSpec": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    }
}


def request(*, tools: bool = False, **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "modelId": MODEL,
        "messages": [{"role": "user", "content": [{"text": "What is the weather in Paris?"}]}],
        "inferenceConfig": {"maxTokens": 4096, "temperature": 1.0},
        "additionalModelRequestFields": THINKING,
    }
    if tools:
        params["toolConfig"] = {"tools": [WEATHER_TOOL]}
    return {**params, **extra}


def streamed(client: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``converse_stream`` consumed to its end, rebuilt as the ``converse`` answer it stands for."""
    blocks: dict[int, dict[str, Any]] = {}
    stop_reason = None
    response = client.converse_stream(**params)
    for event in response["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            blocks[start["contentBlockIndex"]] = {"toolUse": {**start["start"]["toolUse"], "input": ""}}
        elif "contentBlockDelta" in event:
            index, delta = event["contentBlockDelta"]["contentBlockIndex"], event["contentBlockDelta"]["delta"]
            block = blocks.setdefault(index, {})
            if "text" in delta:
                block["text"] = block.get("text", "") + delta["text"]
            elif "toolUse" in delta:
                block["toolUse"]["input"] += delta["toolUse"]["input"]
            else:
                reasoning = block.setdefault("reasoningContent", {})
                part = delta["reasoningContent"]
                if "redactedContent" in part:
                    reasoning["redactedContent"] = part["redactedContent"]
                else:
                    text = reasoning.setdefault("reasoningText", {"text": ""})
                    text["text"] += part.get("text", "")
                    if "signature" in part:
                        text["signature"] = part["signature"]
        elif "messageStop" in event:
            stop_reason = event["messageStop"]["stopReason"]
    content = []
    for _, block in sorted(blocks.items()):
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"])
        content.append(block)
    message = {"role": "assistant", "content": content}
    return {"output": {"message": message}, "stopReason": stop_reason, "ResponseMetadata": response["ResponseMetadata"]}


def converse(client: Any, params: dict[str, Any]) -> dict[str, Any]:
    return client.converse(**params)


MODES: Final[dict[str, Callable[[Any, dict[str, Any]], dict[str, Any]]]] = {"converse": converse, "stream": streamed}


def tool_loop(
    client: Any, mode: str, *, as_sent: Callable[[dict[str, Any]], dict[str, Any]] = lambda message: message
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Question, tool calls answered until the model ends its turn; the history and the answers.
    ``as_sent``: the assistant turn as the application puts it back into the history."""
    history: list[dict[str, Any]] = list(request()["messages"])
    answers = []
    for _ in range(4):
        answer = MODES[mode](client, request(tools=True, messages=list(history)))
        answers.append(answer)
        message = answer["output"]["message"]
        history.append(as_sent(message))
        if answer["stopReason"] != "tool_use":
            break
        (use,) = [b["toolUse"] for b in message["content"] if "toolUse" in b]
        result = {"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": "rain"}]}}
        history.append({"role": "user", "content": [result]})
    return history, answers
