"""What the application chose not to keep is not shown live either: with a store configured, a call whose
capture is off (``execution(capture=False)``, or the predicate saying no) streams nothing to the live
view, in every call mode; a kept call beside it does (the control). With no store at all the live view
still streams (``test_canary``: it tells the viewer that none was kept)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest

from loom_otel.core import ReasoningConfig, execution, step
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.live import flush_live
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.live.modes import ANTHROPIC, anthropic_request

UNKEPT = "CANARY-live-unkept-4b7e"
KEPT = "CANARY-live-kept-91d0"


def _declined_by_execution(
    config: ReasoningConfig,
) -> tuple[ReasoningConfig, Callable[[], AbstractContextManager[object]]]:
    return config, lambda: execution("not-kept", principal="alice", capture=False)


def _declined_by_predicate(
    config: ReasoningConfig,
) -> tuple[ReasoningConfig, Callable[[], AbstractContextManager[object]]]:
    def keep(call: object) -> bool:
        return getattr(call, "execution_id", None) != "not-kept"

    return dataclasses.replace(config, capture=keep), lambda: execution("not-kept", principal="alice")


@pytest.mark.parametrize("declined", [_declined_by_execution, _declined_by_predicate], ids=["execution", "predicate"])
def test_a_call_whose_capture_is_off_streams_nothing_live(declined, live_config, sink, journal_dir, store) -> None:
    config, unkept = declined(live_config)
    with instrumented(AnthropicInstrumentor(), config=config) as telemetry:
        for mode in ANTHROPIC:
            with unkept(), step("think"):
                ANTHROPIC[mode](Simulator(reasoning_text=f"{UNKEPT} {mode}", stream_chunks=3), anthropic_request())
            with execution("kept", principal="alice"), step("think"):
                ANTHROPIC[mode](Simulator(reasoning_text=f"{KEPT} {mode}", stream_chunks=3), anthropic_request())
        assert flush_live()
    assert KEPT in sink.text()  # the control: a kept call is shown live
    assert UNKEPT not in sink.text()
    assert find_leaks([UNKEPT], spans=telemetry.spans, directories=[journal_dir]) == []
