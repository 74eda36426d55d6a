from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2] / "collector-config"
LOSSY = ("batch", "filter", "transform", "redaction", "tail_sampling", "probabilistic_sampler")


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load((ROOT / "otelcol-audit.yaml").read_text())


def test_persistent_storage_is_fsynced(config: dict) -> None:
    storages = {k: v for k, v in config["extensions"].items() if k.split("/")[0] == "file_storage"}
    assert storages and all(v["fsync"] is True for v in storages.values())
    assert set(storages) <= set(config["service"]["extensions"])


def test_receiver_is_otlp(config: dict) -> None:
    assert set(config["receivers"]["otlp"]["protocols"]) >= {"grpc", "http"}


def test_audit_pipeline_archives_to_an_appending_file_with_no_lossy_processor(config: dict) -> None:
    pipelines = config["service"]["pipelines"]
    audit = pipelines["traces/audit"]
    assert audit["receivers"] == ["otlp"]
    assert not any(p.split("/")[0] in LOSSY for p in audit.get("processors") or [])
    (archive,) = [e for e in audit["exporters"] if e.split("/")[0] == "file"]
    settings = config["exporters"][archive]
    assert settings["append"] is True and settings.get("format", "json") == "json"
    assert "compression" not in settings


def test_queues_persist_block_and_retry_forever(config: dict) -> None:
    storages = {k for k in config["extensions"] if k.startswith("file_storage")}
    queued = [e for e in config["exporters"].values() if "sending_queue" in e]
    assert queued
    for exporter in queued:
        queue = exporter["sending_queue"]
        assert queue["enabled"] is True and queue["storage"] in storages
        assert queue["block_on_overflow"] is True
        assert exporter["retry_on_failure"]["max_elapsed_time"] in (0, "0", "0s")


def test_second_pipeline_to_a_tracing_backend(config: dict) -> None:
    pipelines = config["service"]["pipelines"]
    others = [p for name, p in pipelines.items() if name != "traces/audit" and name.startswith("traces")]
    assert others and any(e.split("/")[0] in ("otlp", "otlphttp") for p in others for e in p["exporters"])
    for p in others:
        assert not any(x.split("/")[0] in LOSSY for x in p.get("processors") or [])


def test_rotel_command_line_and_readme() -> None:
    script = (ROOT / "rotel.sh").read_text()
    assert re.search(r"rotel-agent start", script) and "--otlp-exporter-endpoint" in script
    readme = (ROOT / "README.md").read_text()
    for word in ("fsync", "block_on_overflow", "max_elapsed_time", "append", "batch"):
        assert word in readme


def test_readme_points_only_at_files_in_the_repository() -> None:
    """A clone has no shared notes: every file the README names (a backticked path with a ``/`` and an
    extension) exists in the repository or in ``collector-config``."""
    readme = (ROOT / "README.md").read_text()
    named = [p for p in re.findall(r"`([\w./-]+/[\w.-]+\.[a-z]{2,4})`", readme) if not p.startswith("/")]
    assert named, "the README names no file at all"
    for path in named:
        assert (ROOT.parent / path).exists() or (ROOT / path).exists(), path
