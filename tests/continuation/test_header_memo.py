"""The request header's system and tools digests are memoized (issue 15); a memo must never answer for
tools that changed in place since (the same list object, edited)."""

from __future__ import annotations

from google.genai import types

from loom_otel.instrumentation.anthropic import _request_view as anthropic
from loom_otel.instrumentation.google_genai import _transcript as gemini


def _weather(description: str) -> dict[str, object]:
    return {"name": "get_weather", "description": description, "input_schema": {"type": "object"}}


def test_anthropic_tools_edited_in_place_change_the_header() -> None:
    tools = [_weather("Weather for a city")]
    first = anthropic.header_of("anthropic", {"model": "m", "tools": tools})
    assert anthropic.header_of("anthropic", {"model": "m", "tools": [_weather("Weather for a city")]}) == first
    tools[0]["description"] = "Weather for a country"
    assert anthropic.header_of("anthropic", {"model": "m", "tools": tools}).tools != first.tools
    # The memo agrees with reading the tools the long way.
    assert anthropic.header_of("anthropic", {"model": "m", "tools": tools}).tools == anthropic._digest(
        anthropic.norm_value(tools)
    )


def test_gemini_tools_edited_in_place_change_the_header() -> None:
    declaration = types.FunctionDeclaration(name="get_weather", description="Weather for a city")
    config = types.GenerateContentConfig(
        system_instruction="You plan trips.", tools=[types.Tool(function_declarations=[declaration])]
    )
    first = gemini.header_of("gcp.gemini", {"config": config})
    assert gemini.header_of("gcp.gemini", {"config": config}) == first
    declaration.description = "Weather for a country"
    second = gemini.header_of("gcp.gemini", {"config": config})
    assert second.tools != first.tools and second.system == first.system
    assert second.tools == gemini._digest(gemini.tools_value(config.tools))


def test_gemini_callable_tools_are_read_each_time() -> None:
    def get_weather(city: str) -> str:
        return city

    config = types.GenerateContentConfig(tools=[get_weather])
    assert gemini.header_of("gcp.gemini", {"config": config}).tools == gemini._digest(gemini.tools_value([get_weather]))
