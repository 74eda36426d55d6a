"""An instrumented Gemini call, in every call mode, is freed by reference counting (``tests.support.lifetime``)."""

from __future__ import annotations

import pytest

from loom_otel.instrumentation.google_genai import GoogleGenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from tests.google_genai.helpers import MODES, THOUGHT, run
from tests.support.lifetime import left_to_the_collector


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", MODES)
def test_a_call_leaves_nothing_to_the_collector(mode, transcript, sim, client_of, config, journal_dir):
    client = client_of(sim)
    config = type(config)(store=config.store, journal=journal_dir, transcript=transcript)
    with instrumented(GoogleGenAiInstrumentor(), config=config) as telemetry:
        left = left_to_the_collector(lambda: run(mode, client))
    assert left == []
    assert len(reasoning_events(telemetry.spans)) == 1
    assert find_leaks([THOUGHT], spans=telemetry.spans, directories=[journal_dir]) == []
