"""Configuration: argument > environment > default; bad values and bad set-ups fail early."""

from __future__ import annotations

import warnings

import pytest

from loom_otel.core import (
    FileReasoningStore,
    LoomOtelWarning,
    MemoryReasoningStore,
    ReasoningConfig,
    ReasoningConfigError,
    Runtime,
    configure,
)
from loom_otel.core._runtime._config import current_runtime
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import instrumented


def test_defaults_without_environment(tmp_path):
    runtime = Runtime.resolve(environ={})
    assert runtime.enabled and runtime.store is None and not runtime.capture
    assert runtime.transcript == "keep" and not runtime.live and runtime.journal_durability == "batch"
    assert runtime.journal_dir == tmp_path / "state" / "loom-otel" / "journal"  # XDG_STATE_HOME, not the cwd


def test_environment_builds_a_file_store_and_journal_beside_it(tmp_path):
    runtime = Runtime.resolve(environ={"LOOM_OTEL_REASONING_STORE": f"file://{tmp_path}/store"})
    assert isinstance(runtime.store, FileReasoningStore) and runtime.capture
    assert runtime.journal_dir == tmp_path / "store" / "journal"
    assert not (tmp_path / "store" / "journal").exists()  # opened on first capture, not at configuration


def test_argument_beats_environment(tmp_path):
    store = MemoryReasoningStore()
    runtime = Runtime.resolve(
        ReasoningConfig(store=store, capture=False),
        environ={"LOOM_OTEL_REASONING_STORE": "memory:", "LOOM_OTEL_REASONING_CAPTURE": "true"},
    )
    assert runtime.store is store and runtime.capture is False


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LOOM_OTEL_REASONING", "maybe"),
        ("LOOM_OTEL_REASONING_CAPTURE", "2"),
        ("LOOM_OTEL_REASONING_TRANSCRIPT", "hide"),
        ("LOOM_OTEL_REASONING_LIVE", "sometimes"),
        ("LOOM_OTEL_JOURNAL_DURABILITY", "never"),
        ("LOOM_OTEL_REQUIRE_CONTINUATION", "please"),
    ],
)
def test_a_malformed_value_is_an_error_naming_the_variable_and_the_value(name, value):
    with pytest.raises(ReasoningConfigError, match=name) as info:
        Runtime.resolve(environ={name: value})
    assert repr(value) in str(info.value)


def test_an_unusable_store_directory_is_a_config_error_naming_the_path(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ReasoningConfigError, match=str(blocker / "store")):
        Runtime.resolve(environ={"LOOM_OTEL_REASONING_STORE": f"file://{blocker}/store"})


def test_redact_without_a_store_is_refused():
    with pytest.raises(ReasoningConfigError, match="redact"):
        Runtime.resolve(ReasoningConfig(transcript="redact"), environ={})


def test_require_continuation_turns_the_missing_store_into_an_error():
    with pytest.raises(ReasoningConfigError, match="LOOM_OTEL_REQUIRE_CONTINUATION"):
        Runtime.resolve(environ={"LOOM_OTEL_REQUIRE_CONTINUATION": "true"})


def test_boot_warning_once_per_provider_and_silenced_by_opt_out(tmp_path):
    with pytest.warns(LoomOtelWarning, match="anthropic can return model reasoning") as caught:
        with instrumented(AnthropicInstrumentor()):
            pass
    assert len([w for w in caught if "anthropic" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with instrumented(AnthropicInstrumentor(), environ={"LOOM_OTEL_REASONING": "false"}):
            pass


def test_store_uri_forms(tmp_path):
    assert isinstance(Runtime.resolve(environ={"LOOM_OTEL_REASONING_STORE": "memory:"}).store, MemoryReasoningStore)
    assert isinstance(Runtime.resolve(environ={"LOOM_OTEL_REASONING_STORE": str(tmp_path)}).store, FileReasoningStore)
    with pytest.raises(ReasoningConfigError):
        Runtime.resolve(environ={"LOOM_OTEL_REASONING_STORE": "file://remote-host/x"})


def test_configure_sets_the_process_default():
    runtime = configure(store="memory:")
    assert current_runtime() is runtime and runtime.keeps_text


def test_each_resolution_reads_the_environment_and_shares_the_store_of_a_url(monkeypatch, tmp_path):
    from loom_otel.core._runtime._config import runtime_for

    monkeypatch.setenv("LOOM_OTEL_REASONING_STORE", f"file://{tmp_path}/store")
    first, second = runtime_for(None), runtime_for(None)
    assert first.store is second.store and first.journal is second.journal  # one per process
    monkeypatch.setenv("LOOM_OTEL_REASONING", "false")
    assert not runtime_for(None).enabled and first.enabled


def test_without_a_store_an_unwritable_journal_warns_once_and_never_raises(tmp_path, monkeypatch):
    from loom_otel.core._evidence._journal import _writer as _journal

    monkeypatch.setattr(_journal, "_warned_unsigned", True)
    from loom_otel.core._evidence._canonical import chain_hash
    from loom_otel.core._evidence._journal._writer import record_body

    blocker = tmp_path / "journal"
    blocker.write_text("")  # a file where the journal's directory should be
    with pytest.warns(LoomOtelWarning, match="audit journal directory") as caught:
        runtime = Runtime.resolve(ReasoningConfig(journal=blocker), environ={})
        entries = [runtime.journal.append("capture", {"n": n}) for n in range(3)]
        Runtime.resolve(ReasoningConfig(journal=blocker), environ={})  # the same location: no second warning
    assert len([w for w in caught if "audit journal directory" in str(w.message)]) == 1
    assert [e.seq for e in entries] == [1, 2, 3] and len({e.origin for e in entries}) == 1
    assert [e.prev for e in entries[1:]] == [e.hash for e in entries[:-1]]  # still a chain, kept in memory
    record = {"v": 1, "origin": entries[0].origin, "seq": 1, "prev": entries[0].prev, "time": entries[0].time}
    record |= {"type": "capture", "attributes": {"n": 0}}
    assert chain_hash(entries[0].prev, record_body(record)) == entries[0].hash
    blocker.unlink()  # the location works again: records go to the disk again
    assert runtime.journal.append("capture", {"n": 3}).origin != entries[0].origin
    assert blocker.is_dir()


def test_with_a_store_an_unusable_journal_is_an_error_naming_path_and_variable(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    environ = {"LOOM_OTEL_REASONING_STORE": "memory:", "LOOM_OTEL_AUDIT_JOURNAL": str(blocker / "journal")}
    with pytest.raises(ReasoningConfigError, match="LOOM_OTEL_AUDIT_JOURNAL") as info:
        Runtime.resolve(environ=environ)
    assert str(blocker / "journal") in str(info.value)
