from __future__ import annotations

import os
import stat

import pytest

from godot_mcp.errors import (
    Failed,
    IntegrityError,
    NotFound,
    NotYours,
    OutOfRange,
    TooLarge,
)
from godot_mcp.store.store import release_session_id
from godot_mcp.store.values import Caller, Limits, NewArtifact
from tests.store.conftest import Env, RawBlobs, read_all, sha


def test_registered_bytes_read_back_whole_and_in_ranges(env: Env) -> None:
    data = os.urandom(3 * 512 * 1024 + 12345)
    info = env.store.register(env.caller, env.generation, NewArtifact("image/png", data))
    assert info.size == len(data) and info.sha256 == sha(data)
    assert read_all(env.store, env.caller, info.uri) == data
    part = env.store.read(env.caller, f"{info.uri}?offset=70000&length=1000")
    assert part.data == data[70000:71000] and part.offset == 70000 and part.length == 1000


def test_a_read_without_range_of_a_large_artifact_answers_the_first_chunk(env: Env) -> None:
    data = os.urandom(600 * 1024)
    info = env.store.register(env.caller, env.generation, NewArtifact("image/png", data))
    r = env.store.read(env.caller, info.uri)
    assert (r.offset, r.length, r.size) == (0, 512 * 1024, len(data))
    assert r.data == data[: 512 * 1024]


def test_identical_bytes_are_stored_once_but_each_counts_against_the_budget(env: Env) -> None:
    data = os.urandom(100_000)
    a = env.store.register(env.caller, env.generation, NewArtifact("image/png", data))
    b = env.store.register(env.caller, env.generation, NewArtifact("image/png", data))
    assert a.id != b.id and a.sha256 == b.sha256
    assert list(env.store.blobs.iter_blobs()) == [a.sha256]
    assert env.store.bytes_in_use() == 2 * len(data)


def test_blob_files_are_private_and_named_by_their_sha256(env: Env) -> None:
    data = b"hello artifact"
    info = env.store.register(env.caller, env.generation, NewArtifact("image/png", data))
    assert RawBlobs(env.store).read(info.sha256) == data
    if env.backend.s3 is not None:  # a bucket: one object, named by the SHA-256, and its id
        assert sorted(env.backend.objects()) == ["store/.store-id", f"store/blobs/{info.sha256}"]
        return
    path = env.store.blobs.objects.path_of(info.sha256)  # type: ignore[attr-defined]
    assert path.parent.parent.parent == env.store.layout.blob_dir
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for d in (path.parent, path.parent.parent, env.store.layout.blob_dir, env.state_dir):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_an_expected_sha256_mismatch_is_refused_and_nothing_is_kept(env: Env) -> None:
    with pytest.raises(IntegrityError):
        env.store.register(
            env.caller, env.generation, NewArtifact("image/png", b"abc", expected_sha256="0" * 64)
        )
    with pytest.raises(IntegrityError):
        env.store.register(
            env.caller, env.generation, NewArtifact("image/png", b"abc", expected_size=4)
        )
    assert list(env.store.blobs.iter_blobs()) == []
    assert list(env.store.blobs.iter_temp()) == []
    assert env.store.bytes_in_use() == 0


def test_a_capture_that_does_not_fit_is_refused_never_truncated(env: Env) -> None:
    store = env.reopen(Limits(store_budget_bytes=1000))
    store.register(env.caller, env.generation, NewArtifact("image/png", b"x" * 600))
    with pytest.raises(TooLarge):
        store.register(env.caller, env.generation, NewArtifact("image/png", os.urandom(401)))
    assert store.bytes_in_use() == 600
    ok = store.register(env.caller, env.generation, NewArtifact("image/png", os.urandom(400)))
    assert store.bytes_in_use() == 1000 and ok.size == 400


def test_a_group_commits_together_or_not_at_all(env: Env) -> None:
    store = env.reopen(Limits(store_budget_bytes=10_000))
    items = [
        NewArtifact("application/octet-stream", os.urandom(4000), name=f"f{i}") for i in range(3)
    ]
    with pytest.raises(TooLarge):
        store.register_group(env.caller, env.generation, items, export_id="e1")
    assert store.bytes_in_use() == 0 and store.export_artifacts("e1") == []
    assert list(store.blobs.iter_blobs()) == [] and list(store.blobs.iter_temp()) == []
    infos = store.register_group(env.caller, env.generation, items[:2], export_id="e2")
    assert [i.name for i in store.export_artifacts("e2")] == ["f0", "f1"]
    assert store.bytes_in_use() == 8000 and len(infos) == 2


def test_reads_check_resolution_then_binding_then_range(env: Env) -> None:
    info = env.store.register(env.caller, env.generation, NewArtifact("image/png", b"0123456789"))
    other = Caller("someone", None, None, env.caller.project_id)
    with pytest.raises(NotYours) as mine:
        env.store.read(other, f"{info.uri}?offset=999")
    assert (mine.value.what, mine.value.message) == (
        "artifact",
        "this artifact belongs to another caller",
    )
    with pytest.raises(OutOfRange) as exc:
        env.store.read(env.caller, f"{info.uri}?offset=10")
    assert exc.value.size == 10
    with pytest.raises(NotFound):
        env.store.read(other, "godot-mcp://artifacts/AAAAAAAAAAAAAAAAAAAAAA?offset=999")


def test_other_session_launch_or_project_is_a_binding_mismatch(env: Env) -> None:
    http = Caller("alice", "sess-1", "launch-1", env.caller.project_id)
    info = env.store.register(http, env.generation, NewArtifact("image/png", b"abc"))
    assert env.store.read(http, info.uri).data == b"abc"
    for c in (
        Caller("alice", "sess-2", "launch-1", env.caller.project_id),
        Caller("alice", "sess-1", "launch-2", env.caller.project_id),
        Caller("alice", "sess-1", "launch-1", env.caller.project_id + 1),
        Caller("bob", "sess-1", "launch-1", env.caller.project_id),
        env.caller,
    ):
        with pytest.raises(NotYours):
            env.store.read(c, info.uri)
        assert env.store.list(c).items == []


def test_a_new_generation_invalidates_older_artifacts(env: Env) -> None:
    info = env.store.register(env.caller, env.generation, NewArtifact("image/png", b"abc"))
    (env.project / "project.godot").write_text("changed\n")
    state = env.store.projects.observe(env.project)
    assert state.generation == env.generation + 1
    with pytest.raises(NotFound):
        env.store.read(env.caller, info.uri)
    assert env.store.list(env.caller).items == []
    assert env.store.projects.advance(env.project).generation == env.generation + 2


def test_an_unchanged_project_keeps_its_generation(env: Env) -> None:
    (env.project / "project.godot").touch()
    assert env.store.projects.observe(env.project).generation == env.generation


def test_registration_for_a_superseded_generation_is_refused(env: Env) -> None:
    env.store.projects.advance(env.project)
    with pytest.raises(Failed):
        env.store.register(env.caller, env.generation, NewArtifact("image/png", b"abc"))
    assert env.store.bytes_in_use() == 0


def test_listing_pages_through_a_stable_order(env: Env) -> None:
    ids = [
        env.store.register(env.caller, env.generation, NewArtifact("image/png", bytes([i]))).id
        for i in range(7)
    ]
    seen: list[str] = []
    cursor = None
    while True:
        page = env.store.list(env.caller, cursor, limit=3)
        seen += [i.id for i in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == ids


def test_a_released_session_can_never_be_read_again(env: Env) -> None:
    http = Caller("alice", "sess-1", "launch-1", env.caller.project_id)
    info = env.store.register(http, env.generation, NewArtifact("image/png", b"abc"))
    assert release_session_id(env.store, "launch-1", "sess-1") == 1
    with pytest.raises(NotFound):
        env.store.read(http, info.uri)
    assert env.store.bytes_in_use() == 0 and list(env.store.blobs.iter_blobs()) == []


def test_a_changed_block_is_caught_by_the_read_that_serves_it(env: Env) -> None:
    data = os.urandom(200_000)
    info = env.store.register(env.caller, env.generation, NewArtifact("image/png", data))
    env.store.read(env.caller, f"{info.uri}?offset=0&length=10")  # verified in full once
    RawBlobs(env.store).poke(info.sha256, 150_000, b"\x00" * 8)
    # As if the change came after the full verification without touching the file's stat.
    env.store._verified[info.sha256] = env.store.blobs.head(info.sha256, info.size)
    assert env.store.read(env.caller, f"{info.uri}?offset=0&length=1000").data == data[:1000]
    with pytest.raises(NotFound):
        env.store.read(env.caller, f"{info.uri}?offset=140000&length=20000")
    with pytest.raises(NotFound):
        env.store.read(env.caller, f"{info.uri}?offset=0&length=1000")


def test_a_blob_whose_bytes_changed_is_withdrawn(env: Env) -> None:
    data = os.urandom(200_000)
    info = env.store.register(env.caller, env.generation, NewArtifact("image/png", data))
    raw = RawBlobs(env.store)
    raw.poke(info.sha256, 150_000, b"\x00" * 8)
    other = Caller("someone-else", None, None, env.caller.project_id)
    with pytest.raises(NotFound):  # bytes intact is part of resolving: before the binding
        env.store.read(other, f"{info.uri}?offset=0&length=1000")
    with pytest.raises(NotFound):
        env.store.read(env.caller, f"{info.uri}?offset=0&length=1000")
    assert raw.read(info.sha256) is None
    assert env.store.blobs.quarantined() == 1


def test_a_new_process_verifies_a_blob_in_full_once_then_reads_it(env: Env) -> None:
    data = os.urandom(300_000)
    info = env.store.register(env.caller, env.generation, NewArtifact("image/png", data))
    assert env.store.read(env.caller, info.uri).data == data  # verified at write
    store = env.reopen()  # a new process has verified nothing yet
    assert store.read(env.caller, info.uri).data == data
    assert store.read(env.caller, info.uri).data == data
