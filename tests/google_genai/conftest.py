"""Gemini fixtures: the real google-genai SDK over the simulator (in-process or over HTTP)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from google import genai
from google.genai import types

from loom_otel.testing.simulator import Simulator, serve
from tests.google_genai.helpers import THOUGHT


@pytest.fixture
def sim() -> Simulator:
    return Simulator(reasoning_text=THOUGHT, stream_chunks=4)


@pytest.fixture(params=["transport", "http"])
def client_of(request: pytest.FixtureRequest) -> Iterator[Callable[[Simulator], genai.Client]]:
    """Builds a client on the simulator: in-process transport, or a real HTTP server."""
    if request.param == "transport":
        yield lambda sim: sim.genai_client()
        return
    servers: list[Any] = []

    def over_http(sim: Simulator) -> genai.Client:
        context = serve(sim)
        servers.append(context)
        server = context.__enter__()
        return genai.Client(api_key="x", http_options=types.HttpOptions(base_url=server.url))

    yield over_http
    for context in servers:
        context.__exit__(None, None, None)
