"""OpenAI fixtures: the real openai SDK over the simulator (in-process or over HTTP)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest

from loom_otel.testing.simulator import Simulator, serve
from tests.openai.helpers import THOUGHT


@pytest.fixture(params=["reasoning_content", "reasoning"])
def sim(request: pytest.FixtureRequest) -> Simulator:
    return Simulator(reasoning_text=THOUGHT, stream_chunks=4, reasoning_field=request.param)


@pytest.fixture(params=["transport", "http"])
def make(request: pytest.FixtureRequest, sim: Simulator) -> Iterator[Callable[[bool], Any]]:
    """``make(is_async)``: a fresh client on the simulator, in-process or over a real HTTP server."""
    if request.param == "transport":
        yield lambda is_async: sim.async_openai_client() if is_async else sim.openai_client()
        return
    with serve(sim) as server:
        url = f"{server.url}/v1"
        yield lambda is_async: (openai.AsyncOpenAI if is_async else openai.OpenAI)(
            api_key="x", base_url=url, max_retries=0
        )
