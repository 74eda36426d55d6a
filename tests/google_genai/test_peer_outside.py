"""A GenAI instrumentation wrapping ``generate_content_stream`` outside loom-otel is seen as for
``generate_content``: the stream's deferred send starts its call the way every send does, so loom-otel's
span carries the capture but no GenAI attributes (the peer's span is the call's one GenAI span)."""

from __future__ import annotations

from typing import Any

import pytest
import wrapt
from google.genai import models

from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented
from tests.google_genai.helpers import THOUGHT, run

METHODS = {"sync": "generate_content", "stream": "generate_content_stream"}


def _peer(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    return wrapped(*args, **kwargs)


_peer.__module__ = "opentelemetry.instrumentation.stand_in"  # where a GenAI peer's wrapper lives


@pytest.mark.parametrize("mode", list(METHODS))
def test_a_peer_outside_leaves_the_genai_attributes_to_its_span(mode, sim, config, journal_dir):
    name = METHODS[mode]
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        wrapt.wrap_function_wrapper(models, f"Models.{name}", _peer)  # instrumented after loom-otel: outside
        try:
            run(mode, sim.genai_client())
        finally:
            setattr(models.Models, name, getattr(models.Models, name).__wrapped__)
    (span,) = [s for s in telemetry.spans if any(e.name == "loom.reasoning.captured" for e in s.events)]
    assert span.attributes["loom.execution.id"]
    assert not [key for key in span.attributes if key.startswith("gen_ai.")]
    assert find_leaks([THOUGHT], spans=telemetry.spans, directories=[journal_dir]) == []
