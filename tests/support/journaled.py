"""A journal, a runtime over it and one capture (fixtures for the journal, exporter and verify tests; each
folder's ``conftest`` imports them), and helpers to read a chain's lines."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from loom_otel.core import MemoryReasoningStore, Reasoning, ReasoningConfig, ReasoningKind, Runtime
from loom_otel.core._calls._capture import Capture, capture
from loom_otel.core._evidence._journal._writer import Journal

CANARY = "CANARY-reasoning-text-7f3a"


@pytest.fixture
def journal(journal_dir: Path) -> Journal:
    j = Journal(journal_dir, durability="os", checkpoint_key=None, checkpoint_every=10, checkpoint_interval=0)
    yield j
    j.close()


@pytest.fixture
def runtime(journal: Journal) -> Runtime:
    return Runtime.resolve(ReasoningConfig(store=MemoryReasoningStore(), journal=journal))


@pytest.fixture
def do_capture(runtime: Runtime) -> Callable[..., Capture | None]:
    def run(tracer_provider: TracerProvider, text: str = CANARY) -> Capture | None:
        tracer = tracer_provider.get_tracer("test")
        with tracer.start_as_current_span("chat m") as span:
            return capture(
                runtime,
                span,
                [Reasoning(ReasoningKind.TEXT, "anthropic", text=text, signature="sig")],
                provider="anthropic",
                request_model="m",
                response_model="m",
            )

    return run


def journal_lines(directory: Path) -> tuple[Path, list[bytes]]:
    """The single chain's single segment and its lines."""
    (origin,) = [p for p in directory.iterdir() if p.is_dir()]
    (segment,) = sorted(origin.glob("*.jsonl"))
    return segment, segment.read_bytes().splitlines(keepends=True)


def parse(line: bytes) -> dict:
    return json.loads(line)
