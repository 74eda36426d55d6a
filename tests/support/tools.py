"""Tool definitions the Anthropic tests send (the simulator calls the first one)."""

from __future__ import annotations

from typing import Any

__all__ = ["TRAINS", "WEATHER"]

WEATHER: dict[str, Any] = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
TRAINS: dict[str, Any] = {
    "name": "find_trains",
    "description": "Trains between two cities.",
    "input_schema": {"type": "object", "properties": {"origin": {"type": "string"}}},
}
