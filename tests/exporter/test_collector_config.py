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


_DURATION = re.compile(r"^(\d+)(ns|us|µs|ms|s)$")
_NANOS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def test_the_archive_is_flushed_as_often_as_the_file_exporter_allows(config: dict) -> None:
    """The ``file`` exporter buffers and flushes every ``flush_interval`` (default 1 s; ``0`` means the
    default) and never fsyncs: the window a collector crash loses is that interval, kept at a millisecond."""
    settings = config["exporters"]["file/audit"]
    found = _DURATION.match(str(settings.get("flush_interval", "")))
    assert found, "flush_interval must be set (the default is 1s)"
    nanos = int(found.group(1)) * _NANOS[found.group(2)]
    assert 0 < nanos <= 1_000_000
    readme = (ROOT / "README.md").read_text()
    assert "What the acknowledgement means" in readme and "`fsync`" in readme and "not yet in the archive" in readme
    assert 'means "in the archive"' not in readme


PHOENIX_HTTP, PHOENIX_GRPC = 6006, 4317
"""Arize Phoenix's documented ports: the UI and OTLP/HTTP (``/v1/traces``) on 6006, OTLP/gRPC on 4317."""


def _defaults(script: str) -> dict[str, str]:
    return dict(re.findall(r"\$\{(\w+):-([^}]*)\}", script))


def _port(endpoint: str) -> int:
    return int(endpoint.rstrip("/").rsplit(":", 1)[1].split("/")[0])


def test_rotel_defaults_reach_phoenix_and_stay_out_of_its_way() -> None:
    script = (ROOT / "rotel.sh").read_text()
    defaults = _defaults(script)
    backend, protocol = defaults["BACKEND"], defaults["BACKEND_PROTOCOL"]
    assert '--otlp-exporter-protocol "${BACKEND_PROTOCOL:-' in script
    assert (protocol, _port(backend)) in (("grpc", PHOENIX_GRPC), ("http", PHOENIX_HTTP))
    listening = {_port(defaults["ROTEL_GRPC"]), _port(defaults["ROTEL_HTTP"])}
    assert len(listening) == 2 and not listening & {PHOENIX_HTTP, PHOENIX_GRPC}  # both on one host
    readme = (ROOT / "README.md").read_text()
    assert f"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:{_port(defaults['ROTEL_GRPC'])}" in readme
    assert f"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:{_port(defaults['ROTEL_GRPC'])}" in script


def test_log_records_are_archived_and_not_forwarded(config: dict) -> None:
    """Checkpoints and tombstones travel as log records: the archive gets them (``verify --against``),
    the tracing backend does not (its trace list would show each as a trace)."""
    pipelines = config["service"]["pipelines"]
    logs = {name: p for name, p in pipelines.items() if name.split("/")[0] == "logs"}
    archives = {e for p in logs.values() for e in p["exporters"] if e.split("/")[0] == "file"}
    assert archives and archives <= set(pipelines["traces/audit"]["exporters"])
    assert not any(e.split("/")[0] in ("otlp", "otlphttp") for p in logs.values() for e in p["exporters"])
    assert all(p["receivers"] == ["otlp"] and not p.get("processors") for p in logs.values())
