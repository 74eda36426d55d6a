"""Attempt numbering: named steps count their captures; a step that defaults to the span is one call."""

from __future__ import annotations

from loom_otel.core._runtime import _context
from loom_otel.core._runtime._context import next_attempt, step


def test_named_steps_count_attempts():
    with step("plan"):
        assert [next_attempt(None, "e-count", "plan", named=True) for _ in range(3)] == [1, 2, 3]
        assert next_attempt("t", "e-count", "plan", named=True) == 1  # another tenant's step


def test_default_steps_are_attempt_one_and_not_remembered():
    before = len(_context._attempts)
    assert [next_attempt(None, "e-default", f"{n:016x}", named=False) for n in range(100)] == [1] * 100
    assert len(_context._attempts) == before


def test_remembered_steps_are_bounded(monkeypatch):
    monkeypatch.setattr(_context, "_ATTEMPTS_KEPT", 8)
    monkeypatch.setattr(_context, "_attempts", {})
    for n in range(20):
        with step(f"s{n}"):
            next_attempt(None, "e-bound", f"s{n}", named=True)
    with step("s19"):
        assert next_attempt(None, "e-bound", "s19", named=True) == 2  # the most recent is still counted
    assert len(_context._attempts) == 8
