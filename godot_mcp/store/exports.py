"""Export records: the store's table of managed exports, and the only code that writes it.

Each row binds an export to its caller (like an artifact) and names the server process
running it (its host, pid and start time), so a restarted server tells an export whose server
died (``interrupted``) from one still running: by the process on its own host, by the host's
heartbeat for other hosts (``store/hosts.py``). Times come from the store's clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update

from godot_mcp.store.db import read_session, write_session
from godot_mcp.store.models import Export
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller

RUNNING_STATES = ("running", "starting")


@dataclass(frozen=True)
class ExportRecord:
    """One export as the store keeps it."""

    id: str
    principal: str
    session_id: str | None
    launch_id: str | None
    project_id: int
    preset: str
    kind: str
    state: str
    error: str | None
    log_tail: str | None
    owner_pid: int
    owner_start: str
    ended_us: int | None
    owner_host: str | None = None
    platform: str | None = None  # an export by platform has no preset ("")


def _record(row: Export) -> ExportRecord:
    return ExportRecord(
        id=row.id,
        principal=row.principal,
        session_id=row.session_id,
        launch_id=row.launch_id,
        project_id=row.project_id,
        preset=row.preset,
        kind=row.kind,
        state=row.state,
        error=row.error,
        log_tail=row.log_tail,
        owner_pid=row.owner_pid,
        owner_start=row.owner_start,
        ended_us=row.ended_us,
        owner_host=row.owner_host,
        platform=row.platform,
    )


class ExportRecords:
    """The exports table of one store."""

    def __init__(self, store: ArtifactStore) -> None:
        self.store = store
        self.engine = store.engine

    def create(
        self,
        export_id: str,
        caller: Caller,
        generation: int,
        preset: str,
        kind: str,
        owner: tuple[int, str],
        platform: str | None = None,
    ) -> None:
        """Record a new ``running`` export of ``caller``, run by process ``owner``: of
        ``preset``, or (``preset`` "") of ``platform`` with the engine's defaults."""
        with write_session(self.engine) as s:
            s.add(
                Export(
                    id=export_id,
                    project_id=caller.project_id,
                    generation=generation,
                    principal=caller.principal,
                    session_id=caller.session_id,
                    launch_id=caller.launch_id,
                    preset=preset,
                    kind=kind,
                    platform=platform,
                    state="running",
                    owner_pid=owner[0],
                    owner_start=owner[1],
                    owner_host=self.store.host_id,
                    created_us=self.store.now_us(),
                )
            )

    def finish(
        self, export_id: str, state: str, error: str | None, tail: str | None, ended_us: int
    ) -> None:
        """Record how an export ended."""
        with write_session(self.engine) as s:
            s.execute(
                update(Export)
                .where(Export.id == export_id)
                .values(state=state, error=error, log_tail=tail, ended_us=ended_us)
            )

    def get(self, export_id: str) -> ExportRecord | None:
        """One export, or None."""
        with read_session(self.engine) as s:
            row = s.get(Export, export_id)
            return _record(row) if row is not None else None

    def state(self, export_id: str) -> str | None:
        """One export's state, or None."""
        with read_session(self.engine) as s:
            return s.scalar(select(Export.state).where(Export.id == export_id))

    def running(self) -> list[ExportRecord]:
        """Exports still marked running (by any server on this store)."""
        with read_session(self.engine) as s:
            rows = s.scalars(select(Export).where(Export.state.in_(RUNNING_STATES))).all()
            return [_record(r) for r in rows]

    def interrupted(self) -> dict[str, ExportRecord]:
        """Exports marked interrupted, by id."""
        with read_session(self.engine) as s:
            rows = s.scalars(select(Export).where(Export.state == "interrupted")).all()
            return {r.id: _record(r) for r in rows}

    def mark_interrupted(self, export_id: str, message: str, files: int, size: int) -> None:
        """Mark a running export whose server died, with what its evidence holds."""
        with write_session(self.engine) as s:
            s.execute(
                update(Export)
                .where(Export.id == export_id, Export.state.in_(RUNNING_STATES))
                .values(
                    state="interrupted",
                    error=message,
                    ended_us=self.store.now_us(),
                    evidence_files=files,
                    evidence_bytes=size,
                )
            )

    def forget_evidence(self, export_id: str) -> None:
        """The export's evidence was purged."""
        with write_session(self.engine) as s:
            s.execute(
                update(Export)
                .where(Export.id == export_id)
                .values(evidence_files=None, evidence_bytes=None)
            )
