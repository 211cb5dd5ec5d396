"""Who may delete a blob, chosen once per store: this host's lock, or leases in the database.

A blob without a row is an orphan only if no registration is about to commit it. A private
directory (``LocalGuard``) knows that from the blob lock: registrations hold it shared, so a
holder of the exclusive lock deletes freely. A bucket other hosts write too (``LeaseGuard``)
needs the database: uploads hold leases, an object goes only inside a write transaction that
finds no row and no live lease for it (``store/leases.py``), and an unreferenced object is an
orphan only once it is older than the grace. Everything else about blobs is the same for both.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from godot_mcp.errors import GodotMcpError, IntegrityError
from godot_mcp.store import leases
from godot_mcp.store.blobs import Blobs, StagedBlob
from godot_mcp.store.db import read_session, write_session
from godot_mcp.store.faults import checkpoint
from godot_mcp.store.ids import new_id
from godot_mcp.store.locks import BlobLock
from godot_mcp.store.models import Blob

ORPHAN_GRACE_S = 15 * 60  # an unreferenced shared object this young may be another host's upload
_DELETE_BATCH = 16  # objects deleted under one hold of the write lock (shared blob store)

log = logging.getLogger(__name__)


class LocalGuard:
    """One host's blob directory: the blob lock proves that no registration is in flight."""

    orphan_grace_us = 0  # reconcile holds the exclusive lock: every orphan is one

    def __init__(self, engine: Engine, blobs: Blobs, lock: BlobLock) -> None:
        self.engine, self.blobs, self.lock = engine, blobs, lock

    def holder(self) -> str | None:
        """A registration needs no lease holder here."""
        return None

    def keep(self, holder: str | None, shas: Sequence[str], now_us: int) -> None:
        """Nothing to take: the registration holds the blob lock shared."""

    def committing(
        self, s: Session, holder: str | None, staged: Sequence[StagedBlob], now_us: int
    ) -> None:
        """Inside the commit: every published blob must still be there (the lock kept
        deletions away; an outsider did not)."""
        for st in staged:
            if not self.blobs.exists(st.sha256, st.size):
                raise IntegrityError("a published blob vanished before its commit")

    def give_back(self, holder: str | None) -> None:
        """Nothing was taken."""

    def collect(self, todo: Sequence[str]) -> bool:
        """Delete the blobs among ``todo`` that have no row; False (left for later) when a
        registration holds the lock now."""
        with self.lock.exclusive(timeout=0) as ok:
            if not ok:
                return False
            with read_session(self.engine) as s:
                kept = set(s.scalars(select(Blob.sha256).where(Blob.sha256.in_(todo))))
            for sha in todo:
                if sha not in kept:
                    self.blobs.delete(sha)
                    checkpoint("collect.deleted")
        return True

    def withdraw(self, sha: str) -> None:
        """Quarantine a withdrawn blob unless a row names it again meanwhile."""
        with self.lock.exclusive(timeout=30) as ok:
            if ok:
                with read_session(self.engine) as s:
                    back = s.get(Blob, sha) is not None
                if not back:
                    self.blobs.quarantine(sha)

    def sweep(
        self, known: set[str], gone: Sequence[str], mismatched: Sequence[str], grace_us: int
    ) -> tuple[int, int | None]:
        """Reconcile under the exclusive lock: mismatched blobs aside, every blob without a
        row deleted. Returns (orphans removed, released objects removed: None here)."""
        for sha in mismatched:
            self.blobs.quarantine(sha)
        removed = 0
        for name in list(self.blobs.iter_blobs()):
            if name not in known:
                self.blobs.delete(name)
                removed += 1
                checkpoint("reconcile.orphan")
        return removed, None


class LeaseGuard:
    """A bucket several hosts write: leases in the shared database guard uploads."""

    def __init__(
        self,
        engine: Engine,
        blobs: Blobs,
        now_us: Callable[[], int],
        orphan_grace_s: float = ORPHAN_GRACE_S,
    ) -> None:
        self.engine, self.blobs, self.now_us = engine, blobs, now_us
        self.orphan_grace_us = int(orphan_grace_s * 1_000_000)

    def holder(self) -> str | None:
        """A fresh lease holder for one registration."""
        return new_id()

    def keep(self, holder: str | None, shas: Sequence[str], now_us: int) -> None:
        """Lease every blob about to be uploaded (committed before the upload)."""
        assert holder is not None
        leases.take(self.engine, holder, list(shas), now_us)

    def committing(
        self, s: Session, holder: str | None, staged: Sequence[StagedBlob], now_us: int
    ) -> None:
        """Inside the commit: give the leases back (they kept every upload from deletion; a
        void one fails the commit)."""
        assert holder is not None
        leases.give_back_in(s, holder, [st.sha256 for st in staged], now_us)

    def give_back(self, holder: str | None) -> None:
        """End a failed registration's leases; if the database refuses now, they expire by
        themselves (``LEASE_SECONDS``), which is said, since their blobs wait until then."""
        if holder is None:
            return
        try:
            leases.give_back(self.engine, holder)
        except GodotMcpError as exc:
            log.warning(
                "the leases of a failed registration were not given back (%s); their "
                "uploads are kept until the leases expire in %d s",
                exc,
                leases.LEASE_SECONDS,
            )

    def collect(self, todo: Sequence[str]) -> bool:
        """Delete the objects among ``todo`` no row names and no lease keeps; False (left
        for later, or reconcile) when the database or the bucket does not answer."""
        try:
            self.delete_unused(todo)
        except GodotMcpError:  # unreachable, refused, credentials gone
            return False
        return True

    def withdraw(self, sha: str) -> None:
        """Quarantine a withdrawn object unless a row or a lease names it again meanwhile."""
        self.delete_unused([sha], quarantine=True)

    def sweep(
        self, known: set[str], gone: Sequence[str], mismatched: Sequence[str], grace_us: int
    ) -> tuple[int, int | None]:
        """Reconcile on a bucket other hosts write: an object goes only when no row names it,
        no lease keeps it, and it is older than the grace (the local lock proves nothing
        about other hosts' uploads). Returns (orphans removed, released objects removed)."""
        self.delete_unused(mismatched, quarantine=True)
        released = self.delete_unused(gone)  # their rows went just now: no grace for them
        cutoff = int(time.time() * 1_000_000) - grace_us  # the bucket's clock is a real one
        candidates = [n for n in self.blobs.iter_blobs(older_than_us=cutoff) if n not in known]
        removed = self.delete_unused(candidates)
        checkpoint("reconcile.orphan")
        return removed, released

    def delete_unused(self, shas: Iterable[str], quarantine: bool = False) -> int:
        """Delete (or quarantine) the objects among ``shas`` that no row names and no live
        lease keeps; returns how many. A few at a time: each batch holds every host's write
        lock for its calls to the bucket."""
        todo, done = sorted(set(shas)), 0
        for start in range(0, len(todo), _DELETE_BATCH):
            with write_session(self.engine) as s:
                free = leases.deletable(s, todo[start : start + _DELETE_BATCH], self.now_us())
                for sha in free:
                    if quarantine:
                        self.blobs.quarantine(sha)
                    else:
                        self.blobs.delete(sha)
                        checkpoint("collect.deleted")
            done += len(free)
        return done


Guard = LocalGuard | LeaseGuard
