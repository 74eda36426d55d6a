from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.phoenix import PhoenixServer, wait_until

from .receiver import Receiver, free_port


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Receiver]:
    r = Receiver(tmp_path / "received.jsonl")
    yield r
    r.stop()


def rotel_executable() -> str | None:
    try:
        import rotel
    except ImportError:
        return shutil.which("rotel-agent")
    path = Path(rotel.__file__).parent / "rotel-agent"
    return str(path) if path.is_file() else shutil.which("rotel-agent")


@pytest.fixture
def rotel(tmp_path: Path, phoenix: PhoenixServer) -> Iterator[str]:
    exe = rotel_executable()
    if exe is None:
        pytest.skip("rotel is not installed (pip install rotel)")
    grpc_port, http_port = free_port(), free_port()
    log = (tmp_path / "rotel.log").open("wb")
    proc = subprocess.Popen(
        [
            exe,
            "start",
            "--otlp-grpc-endpoint",
            f"127.0.0.1:{grpc_port}",
            "--otlp-http-endpoint",
            f"127.0.0.1:{http_port}",
            "--exporter",
            "otlp",
            "--otlp-exporter-endpoint",
            f"http://127.0.0.1:{phoenix.grpc_port}",
            "--otlp-exporter-protocol",
            "grpc",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        import socket

        def listening() -> bool:
            with socket.create_connection(("127.0.0.1", grpc_port), timeout=1):
                return True

        wait_until(listening, 30, "rotel to listen")
        yield f"127.0.0.1:{grpc_port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
