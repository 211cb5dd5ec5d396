from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, Limits
from tests.conftest import Backend
from tests.support.projects import make_project
from tests.support.rawblobs import RawBlobs  # noqa: F401 (the store tests' helper)


@dataclass
class Env:
    state_dir: Path
    project: Path
    store: ArtifactStore
    caller: Caller
    generation: int
    backend: Backend

    def reopen(self, limits: Limits | None = None) -> ArtifactStore:
        self.store.close()
        self.store = ArtifactStore(
            self.state_dir, limits or self.store.limits, self.store.clock, **self.backend.options
        )
        return self.store


def stdio_caller(store: ArtifactStore, project: Path) -> tuple[Caller, int]:
    state = store.projects.observe(project)
    return Caller("local", None, None, state.id), state.generation


@pytest.fixture
def env(tmp_path: Path, backend: Backend) -> Iterator[Env]:
    """A store on each backend (SQLite + directory, PostgreSQL + S3), same test body."""
    project = make_project(tmp_path / "project")
    store = ArtifactStore(tmp_path / "state", Limits(), **backend.options)
    caller, gen = stdio_caller(store, project)
    e = Env(tmp_path / "state", project, store, caller, gen, backend)
    yield e
    e.store.close()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_all(store: ArtifactStore, caller: Caller, uri: str) -> bytes:
    """Reassemble an artifact from ranged reads."""
    out = bytearray()
    first = store.read(caller, uri)
    out += first.data
    while len(out) < first.size:
        out += store.read(caller, f"{uri}?offset={len(out)}").data
    return bytes(out)
