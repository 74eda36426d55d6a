"""What the model call holds and what the skeleton holds: ``ModelCall`` keeps the span and the identity
and offers the finishing steps one by one; ``_skeleton.finish`` runs them in order (one place for the
order); the unused delta route (``deliver`` / ``deliver_text``: stream proxies tell the watcher
themselves) is gone."""

from __future__ import annotations

import inspect

from loom_otel.core._calls import _skeleton
from loom_otel.core._calls._model_call import ModelCall

STEPS = ("record_response", "capture", "record_content", "warn_omitted", "remember_captured", "end_completed")


def test_the_dead_delta_route_and_the_hidden_step_list_are_gone():
    for gone in ("deliver", "deliver_text", "complete"):
        assert not hasattr(ModelCall, gone), gone


def test_the_finishing_steps_run_in_order_in_the_skeleton():
    source = inspect.getsource(_skeleton._complete)
    positions = [source.index(f"call.{step}(") for step in STEPS]
    assert positions == sorted(positions)
    assert "_complete(call" in inspect.getsource(_skeleton.finish)
