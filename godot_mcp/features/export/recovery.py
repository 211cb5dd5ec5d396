"""Recovery evidence: what an export had written when its server was killed.

Evidence is not an artifact: it is never served over MCP, retention and
reconcile's temp sweep never remove it; only ``evidence purge`` does. It lives
under ``<state>/evidence/<export_id>/`` with the relative paths the export
wrote (``out/game.pck.tmp``, ``xdg/cache/...``, ``log.txt``).
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from datetime import datetime

from godot_mcp.engine.project import tree
from godot_mcp.errors import InvalidArgument, NotFound
from godot_mcp.features.export import leftovers
from godot_mcp.runtime.dirs import RuntimeDirs
from godot_mcp.runtime.owner import alive
from godot_mcp.store.blobs import mkdir_private
from godot_mcp.store.exports import ExportRecords
from godot_mcp.store.ids import is_valid_id
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import from_us

log = logging.getLogger(__name__)

INTERRUPTED_MESSAGE = (
    "the server stopped during the export; what it had written is kept as recovery evidence"
)


@dataclass(frozen=True)
class Kept:
    """What ``keep_evidence`` kept of an export's leftovers, and what it could not."""

    files: int
    bytes: int
    lost: int = 0
    why: str = ""


def keep_evidence(store: ArtifactStore, export_id: str) -> Kept:
    """Move an export's leftovers into its evidence dir (copy what cannot be moved).

    A file that can be neither moved nor copied is counted as lost, with the reason, and
    logged with its place for the operator: evidence is never dropped without a word.
    """
    work = RuntimeDirs(store.layout.state_dir).exports_dir / export_id
    target = RuntimeDirs(store.layout.state_dir).evidence_dir / export_id
    mkdir_private(RuntimeDirs(store.layout.state_dir).evidence_dir)
    mkdir_private(target)
    files = size = lost = 0
    why = ""
    if work.is_dir():
        for path in leftovers(work):
            rel = path.relative_to(work)
            dest = target / rel
            try:
                dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                length = path.lstat().st_size
                try:
                    os.replace(path, dest)
                except OSError:
                    shutil.copyfile(path, dest, follow_symlinks=False)
                if not dest.is_symlink():
                    os.chmod(dest, 0o600)
            except OSError as exc:
                lost += 1
                why = why or (exc.strerror or type(exc).__name__)
                log.warning(
                    "export %s: evidence file %s could not be kept: %s", export_id, path, exc
                )
                continue
            files += 1
            size += length
        tree.remove(work)
    return Kept(files, size, lost, why)


def settle_interrupted(store: ArtifactStore) -> dict[str, int]:
    """Mark exports whose server died ``interrupted`` and keep their evidence.

    Exports of a live server (this one or another on the same state dir) are left alone.
    """
    records = ExportRecords(store)
    settled = 0
    for row in records.running():
        if row.owner_host not in (None, store.host_id):
            continue  # another host's: judged by its heartbeat (store/hosts.py), not a pid
        if alive(row.owner_pid, row.owner_start):
            continue
        kept = keep_evidence(store, row.id)
        message = INTERRUPTED_MESSAGE
        if kept.lost:
            message += f" ({kept.lost} file(s) of it could not be kept: {kept.why})"
        records.mark_interrupted(row.id, message, kept.files, kept.bytes)
        settled += 1
    _sweep_finished_work(store, records)
    return {"exports_interrupted": settled}


def _sweep_finished_work(store: ArtifactStore, records: ExportRecords) -> None:
    """Remove work dirs of exports that are no longer running (scratch, not evidence)."""
    root = RuntimeDirs(store.layout.state_dir).exports_dir
    if not root.is_dir():
        return
    # Dirs first, states second: an export's row is committed before its dir is made,
    # so a dir listed here that another server just created shows as running below.
    entries = list(root.iterdir())
    running = {r.id for r in records.running()}
    for entry in entries:
        if entry.name not in running:
            tree.remove(entry)


@dataclass(frozen=True)
class Evidence:
    """One interrupted export's evidence: id, file count, bytes, when (no paths)."""

    export_id: str
    files: int
    bytes: int
    interrupted_at: datetime | None
    preset: str | None


def list_evidence(store: ArtifactStore) -> list[Evidence]:
    """Every evidence entry, even empty ones."""
    root = RuntimeDirs(store.layout.state_dir).evidence_dir
    if not root.is_dir():
        return []
    rows = ExportRecords(store).interrupted()
    out = []
    for entry in sorted(root.iterdir()):
        files = [p for p in entry.rglob("*") if p.is_file()]
        row = rows.get(entry.name)
        out.append(
            Evidence(
                export_id=entry.name,
                files=len(files),
                bytes=sum(p.stat().st_size for p in files),
                interrupted_at=from_us(row.ended_us) if row and row.ended_us else None,
                preset=row.preset if row else None,
            )
        )
    return out


def purge_evidence(store: ArtifactStore, export_id: str) -> Evidence:
    """Delete one export's evidence."""
    if not is_valid_id(export_id):
        raise InvalidArgument("not an export id")
    match = [e for e in list_evidence(store) if e.export_id == export_id]
    if not match:
        raise NotFound(f"no evidence for export {export_id}")
    shutil.rmtree(RuntimeDirs(store.layout.state_dir).evidence_dir / export_id)
    ExportRecords(store).forget_evidence(export_id)
    return match[0]


def evidence_counts(store: ArtifactStore) -> dict[str, int]:
    """Counts for ``status``: pending evidence entries and their bytes."""
    items = list_evidence(store)
    return {"evidence_exports": len(items), "evidence_bytes": sum(e.bytes for e in items)}
