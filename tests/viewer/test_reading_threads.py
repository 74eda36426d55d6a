"""How many reading threads a viewer worker keeps: one when every read stays on this machine (a file or
memory store, a local journal: reads take the processor, so one thread serves them in the order of its
queue, step reads first), CPUs + 4 when reads wait on the network (a store or an archive elsewhere: waited
on side by side), and ``--threads N`` when given; a count below 1 is a usage error naming the argument."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from loom_otel.cli.__main__ import main
from loom_otel.core import FileReasoningStore, MemoryReasoningStore
from loom_otel.core.stores import ReasoningStore, TenantStores
from loom_otel.viewer import create_app, tokens_file_authenticator
from loom_otel.viewer._settings import SETTINGS_VARIABLE, app_from_environment

DEFAULT = min(32, (os.cpu_count() or 1) + 4)


def _fsspec(_: Path) -> ReasoningStore:
    from loom_otel.core._evidence._store._fsspec import FsspecReasoningStore

    return FsspecReasoningStore(f"memory://loom-{uuid.uuid4().hex[:8]}/r", backoff=0.0)


STORES: dict[str, Any] = {
    "file": lambda root: FileReasoningStore(root / "store"),
    "memory": lambda _: MemoryReasoningStore(),
    "tenants' files": lambda root: TenantStores(
        FileReasoningStore(root / "a"), {"acme": FileReasoningStore(root / "b")}
    ),
    "fsspec": _fsspec,
    "a tenant's fsspec": lambda root: TenantStores(FileReasoningStore(root / "a"), {"acme": _fsspec(root)}),
}


def _app(root: Path, store: ReasoningStore, source: str | Path | None = None, **options: Any) -> Any:
    """The viewer over ``source`` (default: an empty journal directory under ``root``) and ``store``."""
    if source is None:
        source = root / "journal"
        source.mkdir(exist_ok=True)
    (root / "tokens.toml").write_text('[tokens]\nalice = "alice-token-0123456789abcdef"\n')
    return create_app(
        source,
        store,
        authenticator=tokens_file_authenticator(root / "tokens.toml"),
        reads_journal=root / "reads",
        **options,
    )


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("file", 1), ("memory", 1), ("tenants' files", 1), ("fsspec", DEFAULT), ("a tenant's fsspec", DEFAULT)],
)
def test_the_reading_threads_follow_where_the_blobs_are(tmp_path: Path, kind: str, expected: int) -> None:
    app = _app(tmp_path, STORES[kind](tmp_path))
    assert app.state.threads.most == expected


def test_an_archive_elsewhere_is_waited_on_side_by_side(tmp_path: Path) -> None:
    import fsspec

    url = f"memory://loom-{uuid.uuid4().hex[:8]}/archive.jsonl"
    with fsspec.open(url, "wb") as archive:
        archive.write(b"")
    mirror = {"mirror_dir": tmp_path / "mirror"}  # not the shared temporary directory
    app = _app(tmp_path, FileReasoningStore(tmp_path / "store"), url, archive_options=mirror)
    assert app.state.threads.most == DEFAULT


@pytest.mark.parametrize("kind", ["file", "fsspec"])
def test_threads_given_are_kept_whatever_the_store(tmp_path: Path, kind: str) -> None:
    assert _app(tmp_path, STORES[kind](tmp_path), threads=3).state.threads.most == 3


def test_serve_threads_reach_each_worker_and_a_count_below_one_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "journal").mkdir()
    (tmp_path / "tokens.toml").write_text('[tokens]\nalice = "alice-token-0123456789abcdef"\n')
    common = [
        "serve", "--journal", str(tmp_path / "journal"), "--store", f"file://{tmp_path / 'store'}",
        "--tokens", str(tmp_path / "tokens.toml"), "--reads-journal", str(tmp_path / "reads"),
        "--session-key", str(tmp_path / "session.key"),
    ]  # fmt: skip
    for bad in ("0", "-2", "two"):
        assert main([*common, "--threads", bad]) == 2
        assert f"--threads: {bad!r} is not a whole number of at least 1" in capsys.readouterr().err
    assert main([*common, "--workers", "0"]) == 2 and "--workers: '0' is not a whole number" in capsys.readouterr().err

    # What the command hands its workers (the listen step made to fail, once the settings are set): the
    # count, which each worker's app keeps; without it, the rule (a file store: one).
    def unlistenable(host: str, port: int) -> None:
        raise OSError(98, "Address already in use")

    monkeypatch.setattr("loom_otel.cli._serve_workers.bound_port", unlistenable)
    monkeypatch.setenv(SETTINGS_VARIABLE, "")
    for given, expected in ((["--threads", "2"], 2), ([], 1)):
        assert main([*common, *given]) == 1  # the port: nothing else was refused
        settings = json.loads(os.environ[SETTINGS_VARIABLE])
        assert settings["threads"] == (2 if given else None)
        assert app_from_environment().state.threads.most == expected
