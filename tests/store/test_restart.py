from __future__ import annotations

import os

import pytest

from godot_mcp.errors import NotFound
from godot_mcp.runtime.dirs import RuntimeDirs
from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import NewArtifact
from tests.store.conftest import Env, RawBlobs, stdio_caller


def test_an_artifact_inside_its_window_survives_a_restart_for_the_same_stdio_caller(
    env: Env,
) -> None:
    data = os.urandom(300_000)
    info = env.store.register(env.caller, env.generation, NewArtifact("image/png", data))
    store = env.reopen()
    report = reconcile(store)
    assert report.artifacts_kept == 1 and report.blobs_verified == 1
    caller, gen = stdio_caller(store, env.project)
    assert (caller, gen) == (env.caller, env.generation)
    assert store.read(caller, f"{info.uri}?offset=1000&length=5000").data == data[1000:6000]
    assert store.bytes_in_use() == len(data)


def test_a_blob_altered_while_the_server_was_down_is_dropped(env: Env) -> None:
    a = env.store.register(env.caller, env.generation, NewArtifact("image/png", b"a" * 1000))
    b = env.store.register(env.caller, env.generation, NewArtifact("image/png", b"b" * 1000))
    RawBlobs(env.store).write(a.sha256, b"A" * 1000)
    store = env.reopen()
    report = reconcile(store)
    assert report.mismatched_dropped == 1 and report.artifacts_kept == 1
    with pytest.raises(NotFound):
        store.read(env.caller, a.uri)
    assert store.read(env.caller, b.uri).data == b"b" * 1000
    assert store.bytes_in_use() == 1000
    assert list(store.blobs.iter_blobs()) == [b.sha256]


def test_a_blob_deleted_while_the_server_was_down_is_dropped(env: Env) -> None:
    a = env.store.register(env.caller, env.generation, NewArtifact("image/png", b"a" * 10))
    RawBlobs(env.store).remove(a.sha256)
    with pytest.raises(NotFound):
        env.store.read(env.caller, a.uri)
    store = env.reopen()
    report = reconcile(store)
    assert report.missing_dropped == 1 and store.bytes_in_use() == 0


def test_reconcile_removes_orphans_strays_and_stale_temp_files(env: Env) -> None:
    keep = env.store.register(env.caller, env.generation, NewArtifact("image/png", b"keep"))
    orphan = "ab" * 32
    raw = RawBlobs(env.store)
    raw.write(orphan, b"no row for me")
    (env.store.layout.blob_dir / ".tmp" / "stage-dead").write_bytes(b"half")
    raw.write("junk", b"?")
    evidence = RuntimeDirs(env.store.layout.state_dir).evidence_dir / "exp1"
    evidence.mkdir(parents=True)
    (evidence / "game.pck.tmp").write_bytes(b"partial")
    if env.store.blobs.objects.shared:  # another host may be about to commit a young object
        assert reconcile(env.store).orphan_blobs_removed == 0
        assert raw.read(orphan) == b"no row for me"
        raw.write("junk", b"?")
        (env.store.layout.blob_dir / ".tmp" / "stage-dead").write_bytes(b"half")
    report = reconcile(env.store, orphan_grace_s=0)
    assert (report.orphan_blobs_removed, report.temp_files_removed) == (1, 1)
    assert report.stray_files_removed == 1
    assert list(env.store.blobs.iter_blobs()) == [keep.sha256]
    assert (evidence / "game.pck.tmp").read_bytes() == b"partial"


def test_reconcile_removes_a_badly_named_file_in_the_shards_and_keeps_going(
    tmp_path, backend
) -> None:
    store = ArtifactStore(tmp_path / "state", **backend.options)
    raw = RawBlobs(store)
    # In a directory: a misnamed file in a shard, a blob in the wrong shard. In a bucket the
    # names are flat (nothing deeper is listed: it could be another store's).
    strays = ["x-not-a-sha", f"{'ef' * 32}.part"] if store.blobs.objects.shared else []
    strays = strays or ["ab/cd/not-a-sha", f"ab/cd/{'ef' * 32}"]
    for name in strays:
        raw.write(name, b"misplaced")
    report = reconcile(store, orphan_grace_s=0)
    assert report.stray_files_removed == 2 and report.orphan_blobs_removed == 0
    assert [raw.read(name) for name in strays] == [None, None]
    store.close()
