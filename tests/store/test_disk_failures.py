from __future__ import annotations

import errno
import io
import os
from pathlib import Path

import pytest

from godot_mcp.errors import StorageError
from godot_mcp.store import blobs as blobs_module
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import NewArtifact
from tests.store.conftest import Env, make_project, stdio_caller
from tests.support.disks import tmpfs


def _staged_on_disk(store: ArtifactStore, data: bytes) -> bytes | io.BytesIO:
    """``data`` as a source the store stages on disk: a bucket keeps bytes that are in memory
    there, so it gets a stream (which it stages to a temp file, as the directory does)."""
    return io.BytesIO(data) if store.blobs.objects.shared else data


def _assert_nothing_kept(store: ArtifactStore, before: int) -> None:
    assert store.bytes_in_use() == before
    assert list(store.blobs.iter_temp()) == []
    assert len(list(store.blobs.iter_blobs())) == (1 if before else 0)


def test_a_write_failing_midway_leaves_nothing_readable_or_half_written(env, monkeypatch) -> None:
    keep = env.store.register(env.caller, env.generation, NewArtifact("image/png", b"keep"))
    real_write = os.write
    calls = {"n": 0}

    def failing_write(fd: int, data) -> int:
        calls["n"] += 1
        if calls["n"] > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(blobs_module.os, "write", failing_write)
    with pytest.raises(StorageError) as exc:
        source = _staged_on_disk(env.store, os.urandom(5 << 20))
        env.store.register(env.caller, env.generation, NewArtifact("image/png", source))
    assert "No space left" in exc.value.message and "/" not in exc.value.message
    monkeypatch.undo()
    _assert_nothing_kept(env.store, 4)
    assert [i.id for i in env.store.list(env.caller).items] == [keep.id]


def test_a_failing_fsync_is_a_typed_failure(env: Env, monkeypatch) -> None:
    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(blobs_module.os, "fsync", failing_fsync)
    with pytest.raises(StorageError):
        source = _staged_on_disk(env.store, b"x" * 1000)
        env.store.register(env.caller, env.generation, NewArtifact("image/png", source))
    monkeypatch.undo()
    _assert_nothing_kept(env.store, 0)


@pytest.fixture
def small_disk(tmp_path: Path):
    with tmpfs(tmp_path / "disk", "3m") as mount:
        yield mount


def test_a_real_full_disk_refuses_the_registration_and_keeps_the_store_usable(
    tmp_path, small_disk
) -> None:
    store = ArtifactStore(small_disk / "state")
    caller, gen = stdio_caller(store, make_project(tmp_path / "p"))
    keep = store.register(caller, gen, NewArtifact("image/png", b"small"))
    with pytest.raises(StorageError) as exc:
        store.register(caller, gen, NewArtifact("image/png", os.urandom(4 << 20)))
    assert "No space left" in exc.value.message
    _assert_nothing_kept(store, 5)
    again = store.register(caller, gen, NewArtifact("image/png", os.urandom(100_000)))
    assert store.read(caller, keep.uri).data == b"small"
    assert store.read(caller, again.uri).size == 100_000
    store.close()
