"""Fixtures: the simulator reached in-process (transport) or over HTTP (server), with real SDK clients."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import types

from loom_otel.testing.simulator import Simulator, SimulatorServer, serve


@dataclass
class Target:
    """Builds SDK clients pointed at a simulator, in-process or over HTTP."""

    sim: Simulator
    server: SimulatorServer | None = None

    def anthropic_client(self, **kw: Any) -> anthropic.Anthropic:
        if self.server is None:
            return self.sim.anthropic_client(**kw)
        return self.sim.anthropic_client(base_url=self.server.url, http_client=None, **kw)

    def async_anthropic_client(self, **kw: Any) -> anthropic.AsyncAnthropic:
        if self.server is None:
            return self.sim.async_anthropic_client(**kw)
        return self.sim.async_anthropic_client(base_url=self.server.url, http_client=None, **kw)

    def genai_client(self) -> genai.Client:
        if self.server is None:
            return self.sim.genai_client()
        # httpx2 clients as google-genai 3.x builds by default (2.x would build httpx ones)
        options = types.HttpOptions(
            base_url=self.server.url, httpx_client=httpx2.Client(), httpx_async_client=httpx2.AsyncClient()
        )
        return genai.Client(api_key="x", http_options=options)

    def openai_client(self) -> openai.OpenAI:
        if self.server is None:
            return self.sim.openai_client()
        return openai.OpenAI(api_key="x", base_url=f"{self.server.url}/v1", max_retries=0)

    def async_openai_client(self) -> openai.AsyncOpenAI:
        if self.server is None:
            return self.sim.async_openai_client()
        return openai.AsyncOpenAI(api_key="x", base_url=f"{self.server.url}/v1", max_retries=0)


@pytest.fixture
def sim() -> Simulator:
    return Simulator(reasoning_text="CANARY-reasoning-7f3a")


@pytest.fixture
def server(sim: Simulator) -> Iterator[SimulatorServer]:
    with serve(sim) as running:
        yield running


@pytest.fixture(params=["transport", "http"])
def target(request: pytest.FixtureRequest, sim: Simulator) -> Iterator[Target]:
    if request.param == "transport":
        yield Target(sim)
        return
    with serve(sim) as running:
        yield Target(sim, running)


@pytest.fixture
def make_target() -> type[Target]:
    """The ``Target`` class, for tests that build their own simulator."""
    return Target
