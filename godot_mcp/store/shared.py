"""Which blob store a database's rows name, and which database a bucket belongs to.

A row names bytes by their SHA-256 only, so a database must never be used with two blob
stores: a server would find the other's rows without bytes and reconcile would take its
bytes for orphans. The first server on a shared database records its blob store; a server
that comes with another one is refused. A blob directory is named by a random id kept in
it. A bucket is named by a random id the first server makes, recorded both in the database
and in the bucket (``PREFIX/.store-id``), so another database is refused too: a bucket that
already holds a store id is never claimed by a database that does not know it, and a
database records the bucket and prefix it was given: another one (a mistyped prefix) is
refused even where no id is written yet, or its reconcile would find every row's bytes
missing and another host's reconcile the same for its own.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, select

from godot_mcp.errors import ConfigError
from godot_mcp.store.db import write_session
from godot_mcp.store.models import BlobStoreRow

if TYPE_CHECKING:
    from godot_mcp.store.objects import ObjectStore, Recorded

STORE_ID = ".store-id"  # in the blob directory: names it, whatever host or path it is at
HOST_ID = "host-id"  # in the state dir


def directory_location(blob_dir: Path) -> str:
    """How a blob directory is named in the database: by a random id written into it the
    first time (a machine id or a path could be the same on a cloned host)."""
    ident = random_id(blob_dir / STORE_ID)
    if ident is None:
        raise ConfigError("the blob directory's id file is damaged; restore it or start afresh")
    return f"directory {ident}"


def host_id(state_dir: Path) -> str:
    """This host's id in a shared store: a random id kept in its state dir (each host has
    its own), so a project's identity is (host, root) and exports are judged by their host."""
    ident = random_id(state_dir / HOST_ID)
    if ident is None:
        raise ConfigError("the state dir's host id file is damaged; remove it to make a new one")
    return ident


def random_id(marker: Path) -> str | None:
    """The 32-hex id in ``marker``, made (0600, fsynced) when there is none; None if damaged."""
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
        return None
    if len(ident) != 32 or not all(c in "0123456789abcdef" for c in ident):
        return None
    return ident


def claim_store(engine: Engine, blobs: ObjectStore, now_us: int) -> None:
    """Claim the database for ``blobs`` (a directory, a bucket), or refuse: each kind of
    object store knows how it is named and marked (``ObjectStore.claim``)."""
    blobs.claim(lambda propose: _recorded(engine, propose, now_us))


def claim_location(recorded: Recorded, location: str) -> None:
    """Record ``location`` as the database's blob store, or refuse another one."""
    if recorded(location) != location:
        raise ConfigError(
            "this database belongs to another blob store (another host's or another "
            "state dir's blob directory): every server on one database uses the same one"
        )


OTHER_STORE = (
    "this database belongs to another blob store (another bucket, prefix or blob "
    "directory): every server on one database uses the same one"
)
OTHER_DATABASE = "this bucket prefix belongs to another database: give each store its own prefix"


def _recorded(engine: Engine, propose: str | None, now_us: int) -> str | None:
    """The blob store the database records; ``propose`` is recorded when there is none (in
    one write transaction: of servers starting at once, one wins)."""
    with write_session(engine) as s:
        row = s.scalars(select(BlobStoreRow).where(BlobStoreRow.id == 1)).one_or_none()
        if row is None and propose is not None:
            s.add(BlobStoreRow(id=1, location=propose, created_us=now_us))
            return propose
        return None if row is None else row.location
