"""Leases on the blobs of a shared blob store: an upload in flight on any host is no orphan.

On one host the blob lock keeps deletions away from registrations in flight. A bucket that
several hosts write needs the same guarantee across hosts, and the database gives it: every
write transaction takes the ``store_lock`` row first (``db.write_session``), so a lease taken
in one transaction and a deletion decided in another never interleave.

- A registration takes a lease on each blob it will upload (committed before the upload) and
  gives it back in the transaction that commits its rows; a lease older than
  ``LEASE_SECONDS`` is void and that commit fails instead.
- An object is deleted only inside a write transaction that finds no blob row and no live
  lease for it; a lease taken after that transaction waits for it, and its upload comes after
  the deletion.

A host killed mid-upload leaves its lease until it expires; then its object is an orphan.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Engine, delete, select
from sqlalchemy.orm import Session

from godot_mcp.errors import Failed
from godot_mcp.store.db import write_session
from godot_mcp.store.models import Blob, BlobUpload

LEASE_SECONDS = 3600


def take(engine: Engine, holder: str, shas: Iterable[str], now_us: int) -> None:
    """Lease ``shas`` for ``holder`` (one registration) from now on."""
    with write_session(engine) as s:
        expires = now_us + LEASE_SECONDS * 10**6
        s.add_all(  # a new holder: nothing to merge with
            BlobUpload(sha256=sha, holder=holder, expires_us=expires) for sha in sorted(set(shas))
        )


def give_back_in(s: Session, holder: str, shas: Iterable[str], now_us: int) -> None:
    """Inside the transaction that commits ``holder``'s rows: its leases must all be live
    (else Failed, and nothing commits); they end with the commit."""
    wanted = set(shas)
    live = set(
        s.scalars(
            select(BlobUpload.sha256).where(
                BlobUpload.holder == holder, BlobUpload.expires_us > now_us
            )
        )
    )
    if not wanted <= live:
        raise Failed("the upload took longer than its lease; nothing was stored")
    s.execute(delete(BlobUpload).where(BlobUpload.holder == holder))


def give_back(engine: Engine, holder: str) -> None:
    """End ``holder``'s leases (a registration that failed)."""
    with write_session(engine) as s:
        s.execute(delete(BlobUpload).where(BlobUpload.holder == holder))


def deletable(s: Session, shas: Iterable[str], now_us: int) -> list[str]:
    """Inside a write transaction: which of ``shas`` no row names and no live lease keeps.
    Their expired leases go too. Delete the objects before this transaction ends."""
    todo = sorted(set(shas))
    if not todo:
        return []
    named = set(s.scalars(select(Blob.sha256).where(Blob.sha256.in_(todo))))
    leased = set(
        s.scalars(
            select(BlobUpload.sha256).where(
                BlobUpload.sha256.in_(todo), BlobUpload.expires_us > now_us
            )
        )
    )
    free = [sha for sha in todo if sha not in named and sha not in leased]
    if free:
        s.execute(delete(BlobUpload).where(BlobUpload.sha256.in_(free)))
    return free
