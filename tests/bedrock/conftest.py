"""Bedrock fixtures: real boto3 ``bedrock-runtime`` clients over the simulator's HTTP server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config

from loom_otel.testing.simulator import Simulator, serve
from tests.bedrock.helpers import THOUGHT


@pytest.fixture
def sim() -> Simulator:
    return Simulator(reasoning_text=THOUGHT, stream_chunks=4)


@pytest.fixture
def client(sim: Simulator) -> Iterator[Any]:
    """A ``bedrock-runtime`` client with dummy credentials (botocore signs with any), no retries."""
    with serve(sim) as server:
        yield boto3.client(
            "bedrock-runtime",
            endpoint_url=server.url,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
            config=Config(retries={"max_attempts": 1}, read_timeout=60),
        )
