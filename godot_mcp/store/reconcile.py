"""Offline and startup maintenance: ``reconcile`` and ``status``.

``reconcile`` holds the blob lock exclusively, so no registration of any
process is in flight while it runs: every temp file is stale and every blob
file without a row is an orphan. Reads are not blocked. The evidence area is
never touched here (only ``evidence purge`` removes evidence).
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlalchemy import delete, func, select

from godot_mcp.errors import Timeout
from godot_mcp.store.blobs import StaleMark
from godot_mcp.store.db import read_session, rowcount, write_session
from godot_mcp.store.faults import checkpoint
from godot_mcp.store.models import Artifact, Blob
from godot_mcp.store.store import ArtifactStore, drop_unreferenced_blobs, live_bytes, release_dead


@dataclass
class ReconcileReport:
    """What one reconciliation found and did (counts and byte totals only)."""

    expired_released: int = 0
    missing_dropped: int = 0
    mismatched_dropped: int = 0
    orphan_blobs_removed: int = 0
    stray_files_removed: int = 0
    temp_files_removed: int = 0
    artifacts_kept: int = 0
    blobs_verified: int = 0
    bytes_in_use: int = 0
    budget_bytes: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass
class StatusReport:
    """Budget in use and counts, for ``godot-mcp-admin status``."""

    bytes_in_use: int = 0
    budget_bytes: int = 0
    artifacts: int = 0
    readable_artifacts: int = 0
    expired_pending: int = 0
    blobs: int = 0
    quarantined: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return asdict(self)


def _verify(store: ArtifactStore, sha: str, size: int) -> str:
    try:
        got = store.blobs.hash_blob(sha)
    except StaleMark:  # written again while hashed: bytes under their name again, not judged
        return "ok"
    if got is None:
        return "missing"
    return "ok" if got == (sha, size) else "mismatched"


def reconcile(
    store: ArtifactStore, lock_timeout: float = 120.0, orphan_grace_s: float | None = None
) -> ReconcileReport:
    """Re-verify the store and bring disk and rows back into agreement.

    ``orphan_grace_s``: a shared blob store's unreferenced objects younger than this are kept
    (another host may be about to commit them); default: the blob store's own grace.
    """
    report = ReconcileReport(budget_bytes=store.limits.store_budget_bytes)
    with store.lock.exclusive(timeout=lock_timeout) as ok:
        if not ok:
            raise Timeout("the store stayed busy; reconcile did not run")
        with write_session(store.engine) as s:
            report.expired_released, gone = release_dead(s, store.now_us())
        checkpoint("reconcile.released")
        with read_session(store.engine) as s:
            blobs = [
                (b.sha256, b.size, b.created_us)
                for b in s.execute(select(Blob.sha256, Blob.size, Blob.created_us))
            ]
        with ThreadPoolExecutor(max_workers=2) as pool:
            verdicts = list(pool.map(lambda b: _verify(store, b[0], b[1]), blobs))
        bad = {
            sha: (v, born) for (sha, _, born), v in zip(blobs, verdicts, strict=True) if v != "ok"
        }
        report.blobs_verified = len(blobs) - len(bad)
        with write_session(store.engine) as s:
            for sha, (verdict, born) in list(bad.items()):
                # Hashing took time: a blob released and registered again since is another row
                # (another ``created_us``) whose bytes were never judged here.
                if s.scalar(select(Blob.created_us).where(Blob.sha256 == sha)) not in (born, None):
                    del bad[sha]
                    continue
                n = rowcount(s.execute(delete(Artifact).where(Artifact.sha256 == sha))) or 0
                s.execute(delete(Blob).where(Blob.sha256 == sha))
                if verdict == "missing":
                    report.missing_dropped += n
                else:
                    report.mismatched_dropped += n
            gone += drop_unreferenced_blobs(s, s.scalars(select(Blob.sha256)).all())
            report.bytes_in_use = live_bytes(s)
            report.artifacts_kept = int(s.scalar(select(func.count()).select_from(Artifact)) or 0)
            known = set(s.scalars(select(Blob.sha256)))
        checkpoint("reconcile.dropped")
        mismatched = [sha for sha, (verdict, _) in bad.items() if verdict == "mismatched"]
        grace_us = (
            store.guard.orphan_grace_us if orphan_grace_s is None else int(orphan_grace_s * 1e6)
        )
        report.orphan_blobs_removed, released = store.guard.sweep(known, gone, mismatched, grace_us)
        if released is not None:
            report.extra["released_objects_removed"] = released
        for stray in list(store.blobs.iter_strays()):
            store.blobs.remove_stray(stray)
            report.stray_files_removed += 1
        for temp in list(store.blobs.iter_temp()):
            _remove(temp)
            report.temp_files_removed += 1
            checkpoint("reconcile.temp")
    store.forget_verified()
    return report


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def status(store: ArtifactStore) -> StatusReport:
    """Budget in use and counts, read without taking any lock."""
    now = store.now_us()
    with read_session(store.engine) as s:
        total = int(s.scalar(select(func.count()).select_from(Artifact)) or 0)
        expired = int(
            s.scalar(select(func.count()).select_from(Artifact).where(Artifact.expires_us <= now))
            or 0
        )
        blobs = int(s.scalar(select(func.count()).select_from(Blob)) or 0)
        used = live_bytes(s)
    quarantined = store.blobs.quarantined()
    return StatusReport(
        bytes_in_use=used,
        budget_bytes=store.limits.store_budget_bytes,
        artifacts=total,
        readable_artifacts=total - expired,
        expired_pending=expired,
        blobs=blobs,
        quarantined=quarantined,
    )
