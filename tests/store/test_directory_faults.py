"""The directory object store under faults and links, and block sizes: nothing intact is
lost, nothing outside the blob directory is touched, nothing untyped escapes."""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import pytest

from godot_mcp.errors import GodotMcpError
from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, Limits, NewArtifact
from tests.support.projects import make_project

BS = 64 * 1024


def _dir_store(tmp_path: Path, **kw) -> tuple[ArtifactStore, Caller, int]:
    store = ArtifactStore(tmp_path / "state", Limits(), **kw)
    state = store.projects.observe(make_project(tmp_path / "game"))
    return store, Caller("local", None, None, state.id), state.generation


def test_a_transient_stat_error_is_not_taken_for_missing_bytes_by_reconcile(
    tmp_path, monkeypatch
) -> None:
    """A stat that fails (EIO) is not a missing blob: reconcile must not drop the rows and
    then delete the intact file as an orphan."""
    store, caller, gen = _dir_store(tmp_path)
    data = b"a" * (3 * BS)
    info = store.register(caller, gen, NewArtifact("image/png", data))
    blob = store.blobs.objects.path_of(info.sha256)
    real_stat = Path.stat
    failures = {"left": 1}

    def flaky_stat(self, *a, **k):
        if self == blob and failures["left"]:
            failures["left"] -= 1
            raise OSError(errno.EIO, "Input/output error")
        return real_stat(self, *a, **k)

    monkeypatch.setattr(Path, "stat", flaky_stat)
    try:
        reconcile(store)
    except GodotMcpError:
        pass  # a typed refusal would be fine: the store could not be read
    monkeypatch.undo()
    assert blob.exists(), "reconcile deleted intact bytes after one failed stat"
    assert store.read(caller, info.uri).data == data


def test_a_refused_blob_deletion_after_commit_does_not_escape_untyped(
    tmp_path, monkeypatch
) -> None:
    """An unlink refused (EROFS) after the release committed is a typed StorageError naming
    no path, and the release answers what it released; the file stays for a later pass."""
    store, caller, gen = _dir_store(tmp_path)
    info = store.register(caller, gen, NewArtifact("image/png", b"b" * 100))
    blob = store.blobs.objects.path_of(info.sha256)
    real_unlink = Path.unlink

    def refused(self, *a, **k):
        if self == blob:
            raise PermissionError(errno.EROFS, "Read-only file system", str(self))
        return real_unlink(self, *a, **k)

    monkeypatch.setattr(Path, "unlink", refused)
    from godot_mcp.errors import NotFound, StorageError
    from godot_mcp.store.models import Artifact

    with pytest.raises(StorageError) as raised:
        store.blobs.objects.delete(info.sha256)
    assert str(tmp_path) not in raised.value.message
    assert raised.value.message == "cannot remove a blob: Read-only file system"
    assert store.release_where(Artifact.id == info.id) == 1  # committed; the file stays pending
    with pytest.raises(NotFound):
        store.read(caller, info.uri)
    monkeypatch.undo()
    assert blob.exists()


def test_reconcile_never_deletes_files_outside_the_blob_directory(tmp_path) -> None:
    """A link in the blob directory is itself the stray: reconcile removes the link, never
    what it points to."""
    store, _caller, _gen = _dir_store(tmp_path)
    outside = tmp_path / "operator-data"
    (outside / "keep").mkdir(parents=True)
    precious = outside / "keep" / "precious.txt"
    precious.write_text("do not delete")
    os.symlink(outside, store.layout.blob_dir / "link")
    reconcile(store)
    assert precious.exists(), "reconcile deleted a file outside the blob directory"
    assert not os.path.lexists(store.layout.blob_dir / "link")


def test_a_block_size_that_does_not_divide_the_staging_chunk_is_refused(tmp_path) -> None:
    """Block digests line up with offsets only when the block size divides every staged
    and verified chunk: any other size is refused when the store opens."""
    for size in (48 * 1024, 1000, 2 * 1024 * 1024):
        with pytest.raises(ValueError, match="power of two"):
            _dir_store(tmp_path, block_size=size)
    store, caller, gen = _dir_store(tmp_path, block_size=16 * 1024)
    data = os.urandom(3 * 1024 * 1024 + 5)
    info = store.register(caller, gen, NewArtifact("application/octet-stream", data))
    assert info.sha256 == hashlib.sha256(data).hexdigest()
    store.forget_verified()
    assert store.read(caller, f"{info.uri}?offset=65531&length=65536").data == data[65531:131067]


def test_rows_written_with_another_block_size_are_not_withdrawn(tmp_path) -> None:
    """Blobs are read at their row's block size: a store reopened with another one (or
    another host on a shared database) reads older blobs, never withdraws them."""
    store, caller, gen = _dir_store(tmp_path, block_size=64 * 1024)
    data = os.urandom(200 * 1024)
    info = store.register(caller, gen, NewArtifact("application/octet-stream", data))
    store.close()
    store2 = ArtifactStore(tmp_path / "state", Limits(), block_size=32 * 1024)
    assert store2.read(caller, info.uri).data == data
