"""A database shared by several servers: which blob store its rows' bytes are in.

A row names bytes by their SHA-256 only, so a database must never be used with two blob
stores: a server would find the other's rows without bytes and reconcile would take its
bytes for orphans. The first server on a shared database records its blob store; a server
that comes with another one is refused. Until object storage is supported the one blob
store is a state dir's blob directory on one host: servers on one PostgreSQL database
share one state dir.
"""

from __future__ import annotations

import socket
from pathlib import Path

from sqlalchemy import Engine, select

from godot_mcp.errors import ConfigError
from godot_mcp.store.db import write_session
from godot_mcp.store.models import BlobStoreRow


def host_id() -> str:
    """This machine: its systemd machine id, else its host name."""
    for name in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            text = Path(name).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text:
            return text
    return socket.gethostname()


def directory_location(blob_dir: Path) -> str:
    """How a blob directory is named in the database: its host and its path."""
    return f"directory {host_id()}:{blob_dir}"


def claim(engine: Engine, location: str, now_us: int) -> None:
    """Record ``location`` as the database's blob store, or refuse another one."""
    with write_session(engine) as s:
        row = s.scalars(select(BlobStoreRow).where(BlobStoreRow.id == 1)).one_or_none()
        if row is None:
            s.add(BlobStoreRow(id=1, location=location, created_us=now_us))
            return
        if row.location != location:
            raise ConfigError(
                "this database belongs to another blob store (another host's or another "
                "state dir's blob directory): every server on one database uses the same one"
            )
