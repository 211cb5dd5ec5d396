"""A blob store's bytes as an outsider (a disk fault, an operator) touches them: files of the
blob directory, or objects of the bucket."""

from __future__ import annotations

import hashlib
from pathlib import Path

from godot_mcp.store.directory import DirectoryObjects
from godot_mcp.store.s3 import S3Objects
from godot_mcp.store.store import ArtifactStore


class RawBlobs:
    """The blob store's bytes as an outsider (a disk fault, an operator) touches them: files
    of the blob directory, or objects of the bucket."""

    def __init__(self, store: ArtifactStore) -> None:
        self.blobs = store.blobs.objects
        self.s3 = isinstance(self.blobs, S3Objects)

    def _key(self, name: str) -> str:
        assert isinstance(self.blobs, S3Objects)
        return self.blobs.where.key("blobs", name)

    def _path(self, name: str) -> Path:
        assert isinstance(self.blobs, DirectoryObjects)
        if len(name) == 64:
            return self.blobs.path_of(name)
        return self.blobs.root / name

    def read(self, name: str) -> bytes | None:
        if self.s3:
            assert isinstance(self.blobs, S3Objects)
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
            assert isinstance(self.blobs, S3Objects)
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
            assert isinstance(self.blobs, S3Objects)
            self.blobs.client.delete_object(Bucket=self.blobs.where.bucket, Key=self._key(name))
            return
        self._path(name).unlink()

    def plant_orphan(self, data: bytes) -> str:
        """Bytes under their SHA-256 with no row (a crash between publish and commit)."""
        name = hashlib.sha256(data).hexdigest()
        self.write(name, data)
        return name
