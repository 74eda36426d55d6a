"""An instrumented OpenAI call (chat and Responses), in every call mode, is freed by reference counting
(``tests.support.lifetime``)."""

from __future__ import annotations

import pytest

from loom_otel.instrumentation.openai import OpenAiInstrumentor
from loom_otel.testing import find_leaks, instrumented, reasoning_events
from tests.openai.helpers import MODES, THOUGHT, run
from tests.support.lifetime import left_to_the_collector


@pytest.mark.parametrize("transcript", ["keep", "redact"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_call_leaves_nothing_to_the_collector(api, mode, transcript, make, config, journal_dir):
    config = type(config)(store=config.store, journal=journal_dir, transcript=transcript)
    with instrumented(OpenAiInstrumentor(), config=config) as telemetry:
        left = left_to_the_collector(lambda: run(api, mode, make))
    assert left == []
    assert len(reasoning_events(telemetry.spans)) == 1
    assert find_leaks([THOUGHT], spans=telemetry.spans, directories=[journal_dir]) == []
