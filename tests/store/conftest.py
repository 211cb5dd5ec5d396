from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from godot_mcp.store.blobs import FsBlobStore
from godot_mcp.store.s3 import S3BlobStore
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, Limits
from tests.conftest import Backend
from tests.support.projects import make_project


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


class RawBlobs:
    """The blob store's bytes as an outsider (a disk fault, an operator) touches them: files
    of the blob directory, or objects of the bucket."""

    def __init__(self, store: ArtifactStore) -> None:
        self.blobs = store.blobs
        self.s3 = isinstance(store.blobs, S3BlobStore)

    def _key(self, name: str) -> str:
        assert isinstance(self.blobs, S3BlobStore)
        return self.blobs.where.key("blobs", name)

    def _path(self, name: str) -> Path:
        assert isinstance(self.blobs, FsBlobStore)
        if len(name) == 64:
            return self.blobs.path_of(name)
        return self.blobs.root / name

    def read(self, name: str) -> bytes | None:
        if self.s3:
            assert isinstance(self.blobs, S3BlobStore)
            try:
                got = self.blobs.client.get_object(
                    Bucket=self.blobs.where.bucket, Key=self._key(name)
                )
            except self.blobs.client.exceptions.NoSuchKey:
                return None
            return bytes(got["Body"].read())
        path = self._path(name)
        return path.read_bytes() if path.exists() else None

    def write(self, name: str, data: bytes) -> None:
        """Put ``data`` under ``name`` (a SHA-256, or any other name: a stray)."""
        if self.s3:
            assert isinstance(self.blobs, S3BlobStore)
            self.blobs.client.put_object(
                Bucket=self.blobs.where.bucket, Key=self._key(name), Body=data
            )
            return
        path = self._path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def poke(self, name: str, offset: int, data: bytes) -> None:
        """Change bytes in place."""
        old = self.read(name)
        assert old is not None
        self.write(name, old[:offset] + data + old[offset + len(data) :])

    def remove(self, name: str) -> None:
        if self.s3:
            assert isinstance(self.blobs, S3BlobStore)
            self.blobs.client.delete_object(Bucket=self.blobs.where.bucket, Key=self._key(name))
            return
        self._path(name).unlink()
