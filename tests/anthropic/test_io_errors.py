"""Every I/O failure names the path, the system's message and what it means for the evidence (issue 31:
a store on a full disk said only "OSError"). A full disk is simulated by a write that fails with
ENOSPC (the tests run as any user, so a read-only directory would not stop root)."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

import pytest

from loom_otel.core import FileReasoningStore, ReasoningCaptureError, ReasoningConfig
from loom_otel.core._continuation._bindings import Bindings
from loom_otel.core._evidence._store import _file
from loom_otel.instrumentation.anthropic import AnthropicInstrumentor
from loom_otel.testing import find_leaks, instrumented
from loom_otel.testing.simulator import Simulator
from tests.anthropic.modes import MODES, request

CANARY = "CANARY-91b0e2-full-disk-reasoning"
FULL: OSError = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _full_disk(*_: object) -> int:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("mode", list(MODES))
def test_a_full_store_names_its_directory_the_system_message_and_the_consequence(mode, tmp_path, monkeypatch):
    store = FileReasoningStore(tmp_path / "store", fsync=False)
    config = ReasoningConfig(store=store, journal=tmp_path / "journal")
    sim = Simulator(reasoning_text=f"thinking {CANARY}")
    with instrumented(AnthropicInstrumentor(), config=config):
        monkeypatch.setattr(_file.os, "pwritev", _full_disk)  # the pack write: what a full disk refuses
        with pytest.raises(ReasoningCaptureError) as info:
            MODES[mode](sim, request())
        monkeypatch.undo()
    message = str(info.value)
    assert str(tmp_path / "store") in message
    assert os.strerror(errno.ENOSPC) in message and "ENOSPC" in message
    assert "not kept as evidence" in message and "fails closed" in message
    assert find_leaks([CANARY], texts=[message]) == []


def test_an_unwritable_journal_names_the_path_and_the_system_message(tmp_path):
    store = FileReasoningStore(tmp_path / "store", fsync=False)
    from loom_otel.core._evidence._journal._writer import Journal

    journal_dir = tmp_path / "journal"
    config = ReasoningConfig(store=store, journal=Journal(journal_dir))
    with instrumented(AnthropicInstrumentor(), config=config):
        journal_dir.write_text("")  # the location breaks after instrumenting
        with pytest.raises(ReasoningCaptureError) as info:
            MODES["sync"](Simulator(reasoning_text=f"t {CANARY}"), request())
    message = str(info.value)
    assert (str(journal_dir) in message and "Not a directory" in message) or "File exists" in message
    assert "no audit record" in message and CANARY not in message


def test_binding_records_on_a_full_disk_say_where_and_what_it_means(tmp_path, caplog, monkeypatch):
    caplog.set_level(logging.WARNING)
    from loom_otel.core._continuation import _bindings

    bindings = Bindings(tmp_path / "b", deferred=True)
    from tests.continuation.test_bindings import _record

    bindings.add([_record(1)], [])
    monkeypatch.setattr(_bindings, "_write", _full_disk)
    bindings.sync_pending()
    monkeypatch.undo()
    assert str(tmp_path / "b") in caplog.text and os.strerror(errno.ENOSPC) in caplog.text
    assert "restarted process will not know" in caplog.text and "not affected" in caplog.text


def test_an_unloadable_journal_key_names_the_path(tmp_path, monkeypatch):
    from loom_otel.core._evidence._journal import _writer

    monkeypatch.setattr(_writer, "_warned_unsigned", False)
    with pytest.warns(match=str(tmp_path / "gone.pem")) as caught:
        assert _writer._load_signer(str(tmp_path / "gone.pem")) is None
    assert any("No such file or directory" in str(w.message) for w in caught)


def test_failure_detail_never_repeats_an_exceptions_own_text():
    from loom_otel.core._evidence._io_error import failure_detail

    assert failure_detail(ValueError(CANARY), Path("/s")) == "'/s': ValueError"
    assert failure_detail(OSError(CANARY)) == "OSError"
    assert failure_detail(FULL, "/s") == f"'/s': {os.strerror(errno.ENOSPC)} (ENOSPC)"
