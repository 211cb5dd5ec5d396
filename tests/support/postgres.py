"""A real, throw-away PostgreSQL server for the tests, on loopback and a private socket dir.

Debian's ``postgresql`` package: ``initdb`` in a temp dir (as the ``postgres`` user when the
tests run as root, since initdb refuses root), then ``postgres`` listening on 127.0.0.1 at a
free port. Stopped (its whole process group) at the end of the run, whatever happens.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path


def binaries() -> Path | None:
    """The dir of ``initdb`` and ``postgres``, or None when PostgreSQL is not installed."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(candidate, "initdb")):
            return Path(candidate)
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@dataclass
class Postgres:
    """A running cluster: make databases on it, stop it at the end."""

    root: Path
    port: int
    process: subprocess.Popen[bytes]

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh empty database; returns its URL."""
        name = "t_" + uuid.uuid4().hex[:16]
        self.sql(f"CREATE DATABASE {name}")
        return self.url(name)

    def sql(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True
        ) as conn:
            conn.execute(statement)  # type: ignore[arg-type]

    def kill(self) -> None:
        """Stop the server at once (an immediate shutdown, as in a crash), keeping its data."""
        bindir = binaries()
        if self.process.poll() is None and bindir is not None:
            subprocess.run(
                [
                    *_as_postgres(),
                    str(bindir / "pg_ctl"),
                    "-D",
                    str(self.root / "data"),
                    "stop",
                    "-m",
                    "immediate",
                    "-w",
                    "-t",
                    "30",
                ],
                capture_output=True,
                timeout=60,
            )
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=30)

    def restart(self) -> None:
        """Start the server again on the same data and port (after ``kill``)."""
        self.process = _launch(self.root, self.port)
        _wait(self)

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def _launch(root: Path, port: int) -> subprocess.Popen[bytes]:
    bindir = binaries()
    assert bindir is not None
    data = root / "data"
    log = open(root / "postgres.log", "ab")  # noqa: SIM115 - kept for the server's life
    return subprocess.Popen(
        [
            *_as_postgres(),
            str(bindir / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            f"unix_socket_directories={data}",
            "-c",
            "fsync=off",
            "-c",
            "max_connections=200",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait(pg: Postgres) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if pg.process.poll() is not None:
            break
        try:
            pg.sql("SELECT 1")
            return
        except Exception:
            time.sleep(0.1)
    text = (pg.root / "postgres.log").read_text(errors="replace")[-2000:]
    pg.stop()
    raise RuntimeError(f"PostgreSQL did not start: {text}")


def start() -> Postgres:
    """Start a cluster in a fresh temp dir; raises RuntimeError if it does not answer."""
    bindir = binaries()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed")
    root = Path(tempfile.mkdtemp(prefix="godot-mcp-pg-"))
    os.chmod(root, 0o755)  # the postgres user must reach it
    data = root / "data"
    data.mkdir()
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    subprocess.run(
        [
            *_as_postgres(),
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    port = _free_port()
    pg = Postgres(root, port, _launch(root, port))
    _wait(pg)
    return pg
