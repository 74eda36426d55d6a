"""Every loom-otel warning is attributed to the user's line, not to loom-otel, OpenTelemetry, wrapt
or the SDK in between (``_warnings.warn``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from loom_otel.core import LoomOtelWarning, ReasoningConfig, ReasoningConfigError, Runtime
from loom_otel.core._evidence._journal import _writer as _journal
from loom_otel.exporters.chain import ChainedSpanExporter
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import instrumented
from loom_otel.testing.simulator import Simulator

from .newcomer_app import REQUEST


def test_a_bad_environment_value_is_an_error_not_a_warning() -> None:
    with warnings.catch_warnings(), pytest.raises(ReasoningConfigError, match="LOOM_OTEL_REASONING='maybe'"):
        warnings.simplefilter("error")
        Runtime.resolve(environ={"LOOM_OTEL_REASONING": "maybe"})


def test_instrument_and_model_call_warnings_point_at_this_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_journal, "_warned_unsigned", False)  # once per process: make this the first time
    client = Simulator(reasoning_text="kept nowhere").anthropic_client()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with instrumented(AnthropicInstrumentor(), config=ReasoningConfig(journal=tmp_path / "journal")):
            client.messages.create(**REQUEST)  # the first capture opens the journal: "unsigned" warning
    messages = {str(w.message).split(" ")[0]: w for w in caught if issubclass(w.category, LoomOtelWarning)}
    assert set(messages) == {"anthropic", "LOOM_OTEL_CHECKPOINT_KEY"}  # the boot warning, the unsigned one
    assert {w.filename for w in messages.values()} == {__file__}


def test_the_chained_exporters_bad_inner_is_an_error_not_a_warning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LOOM_OTEL_CHAIN_INNER", "carrier-pigeon")
    with (
        warnings.catch_warnings(record=True) as caught,
        pytest.raises(ReasoningConfigError, match="LOOM_OTEL_CHAIN_INNER"),
    ):
        warnings.simplefilter("always")
        ChainedSpanExporter(journal=tmp_path / "journal")
    assert [str(w.message) for w in caught if "LOOM_OTEL_CHAIN_INNER" in str(w.message)] == []


def test_a_warning_with_no_user_frame_is_attributed_to_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issued from a thread pool's worker (every frame loom-otel's, the pool's, the thread's): not
    attributed to ``concurrent/futures/thread.py``, but to nothing."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(_journal, "_warned_unsigned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(_journal._load_signer, None).result() is None
    (warning,) = [w for w in caught if issubclass(w.category, LoomOtelWarning)]
    assert str(warning.message).startswith("LOOM_OTEL_CHECKPOINT_KEY is not set")
    assert (warning.filename, warning.lineno) == ("loom-otel", 0)
