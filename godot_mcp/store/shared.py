"""A database shared by several servers: which blob store its rows' bytes are in.

A row names bytes by their SHA-256 only, so a database must never be used with two blob
stores: a server would find the other's rows without bytes and reconcile would take its
bytes for orphans. The first server on a shared database records its blob store; a server
that comes with another one is refused. Until object storage is supported the one blob
store is a state dir's blob directory on one host, named by a random id kept in it:
servers on one PostgreSQL database share one state dir.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from sqlalchemy import Engine, select

from godot_mcp.errors import ConfigError
from godot_mcp.store.db import write_session
from godot_mcp.store.models import BlobStoreRow

STORE_ID = ".store-id"  # in the blob directory: names it, whatever host or path it is at


def directory_location(blob_dir: Path) -> str:
    """How a blob directory is named in the database: by a random id written into it the
    first time (a machine id or a path could be the same on a cloned host)."""
    marker = blob_dir / STORE_ID
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(secrets.token_hex(16) + "\n")
            f.flush()
            os.fsync(f.fileno())
    try:
        ident = marker.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        ident = ""
    if len(ident) != 32 or not all(c in "0123456789abcdef" for c in ident):
        raise ConfigError("the blob directory's id file is damaged; restore it or start afresh")
    return f"directory {ident}"


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
