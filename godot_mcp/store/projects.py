"""Project generations: a counter per project root, kept in the store.

A project is its root path (on a database other hosts share: this host's id and its root
path, kept as ``HOST:ROOT`` in the row's ``root``, which a bare absolute path never is).
The identity of a project is the SHA-256 of its ``project.godot``. Each request
first compares a cheap stat signature; only when that changed is the file
hashed, and only when the hash changed does the generation advance.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from godot_mcp.store.db import database_errors, write_session
from godot_mcp.store.models import Project


@dataclass(frozen=True)
class ProjectState:
    """A project's row id and its current generation."""

    id: int
    generation: int


def _signature(project_file: Path) -> str:
    try:
        st = os.stat(project_file)
    except OSError:
        return "missing"
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


_MAX_PROJECT_FILE = 16 << 20


def _identity(project_file: Path) -> str | None:
    """The content hash of ``project.godot``; None when it is not a readable regular file.

    Opened without blocking and bounded: a FIFO or a link to ``/dev/zero`` must not hang
    every request.
    """
    try:
        fd = os.open(project_file, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_PROJECT_FILE:
            return None
        return hashlib.sha256(f.read(_MAX_PROJECT_FILE)).hexdigest()


class Projects:
    """Generation bookkeeping over the store's database."""

    def __init__(self, engine: Engine, host: str | None = None) -> None:
        self.engine = engine
        self.host = host
        self._seen: dict[str, str] = {}

    def key(self, root: Path) -> str:
        """The project's row key: its root, qualified by the host on a shared database."""
        return str(root) if self.host is None else f"{self.host}:{root}"

    def observe(self, root: Path) -> ProjectState:
        """The project's state now; advances the generation if ``project.godot`` changed."""
        key = self.key(root)
        sig = _signature(root / "project.godot")
        if self._seen.get(key) == sig:
            with database_errors(), self.engine.connect() as conn:  # one plain SELECT
                seen = conn.execute(
                    select(Project.id, Project.generation, Project.stat_signature).where(
                        Project.root == key
                    )
                ).first()
            if seen is not None and seen.stat_signature == sig:
                return ProjectState(seen.id, seen.generation)
        identity = _identity(root / "project.godot")
        with write_session(self.engine) as s:
            row = self._get_or_create(s, key, identity)
            if row.identity_sha256 != identity:
                row.generation += 1
                row.identity_sha256 = identity
            row.stat_signature = sig
            state = ProjectState(row.id, row.generation)
        self._seen[key] = sig
        return state

    def advance(self, root: Path) -> ProjectState:
        """Advance the generation unconditionally (``project.reload``)."""
        key = self.key(root)
        identity = _identity(root / "project.godot")
        with write_session(self.engine) as s:
            row = self._get_or_create(s, key, identity)
            row.generation += 1
            row.identity_sha256 = identity
            row.stat_signature = _signature(root / "project.godot")
            state = ProjectState(row.id, row.generation)
        self._seen[key] = row.stat_signature or ""
        return state

    @staticmethod
    def _get_or_create(s: Session, key: str, identity: str | None) -> Project:
        row = s.scalars(select(Project).where(Project.root == key)).one_or_none()
        if row is None:
            row = Project(root=key, generation=1, identity_sha256=identity)
            s.add(row)
            s.flush()
        return row
