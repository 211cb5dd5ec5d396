"""The artifact store over an object store in memory (``tests/support/memory_objects.py``):
the logic above the seam (content addressing, versions, verification, quarantine, the lock
or lease guard, reconcile) tested fast, without a disk or a bucket. The same behaviours run
on the real directory and on a real SeaweedFS in the rest of ``tests/store``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from godot_mcp.errors import NotFound, TooLarge
from godot_mcp.store.guard import LeaseGuard, LocalGuard
from godot_mcp.store.models import Artifact
from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, Limits, NewArtifact
from tests.support.memory_objects import MemoryObjects
from tests.support.projects import make_project

BS = 64 * 1024


def _store(
    tmp_path: Path, shared: bool = False, **limits: int
) -> tuple[ArtifactStore, MemoryObjects]:
    objects = MemoryObjects(tmp_path / "staging", shared=shared)
    store = ArtifactStore(tmp_path / "state", Limits(**limits), blobs=objects)
    return store, objects


def _caller(store: ArtifactStore, tmp_path: Path) -> tuple[Caller, int]:
    state = store.projects.observe(make_project(tmp_path / "game"))
    return Caller("alice", "sess", "launch", state.id), state.generation


def test_the_guard_is_chosen_once_by_whether_other_hosts_write_the_store(tmp_path) -> None:
    local, _ = _store(tmp_path / "a")
    shared, _ = _store(tmp_path / "b", shared=True)
    assert type(local.guard) is LocalGuard and type(shared.guard) is LeaseGuard
    assert (local.guard.orphan_grace_us, shared.guard.orphan_grace_us) == (0, 900_000_000)


def test_bytes_go_in_under_their_sha256_and_come_back_in_ranges(tmp_path) -> None:
    store, objects = _store(tmp_path)
    caller, gen = _caller(store, tmp_path)
    data = bytes(range(256)) * (3 * BS // 256 + 7)
    info = store.register(caller, gen, NewArtifact("image/png", data))
    assert objects.names() == [hashlib.sha256(data).hexdigest()] == [info.sha256]
    assert objects.bytes_of(info.sha256) == data
    assert store.read(caller, info.uri).data == data
    got = store.read(caller, f"{info.uri}?offset={BS - 3}&length=10")
    assert got.data == data[BS - 3 : BS + 7]
    assert list((tmp_path / "staging").iterdir()) == []  # staged in memory: no temp file


def test_a_registration_verified_while_written_is_read_without_a_full_verification(
    tmp_path,
) -> None:
    store, objects = _store(tmp_path)
    caller, gen = _caller(store, tmp_path)
    info = store.register(caller, gen, NewArtifact("image/png", b"x" * (5 * BS)))
    objects.calls.clear()
    store.read(caller, f"{info.uri}?offset={2 * BS}&length=10")
    # One ranged read of one block, whose version is the one written: no lookup, no verify.
    assert objects.calls == {"get_range": 1}


def test_bytes_changed_behind_the_store_are_withdrawn_and_kept_aside(tmp_path) -> None:
    store, objects = _store(tmp_path)
    caller, gen = _caller(store, tmp_path)
    data = b"p" * (2 * BS)
    info = store.register(caller, gen, NewArtifact("image/png", data))
    objects.outsider_write(info.sha256, b"q" + data[1:])
    with pytest.raises(NotFound, match=r"^artifact not found$"):
        store.read(caller, info.uri)
    assert objects.names() == [] and len(objects.names("quarantine")) == 1
    assert store.blobs.quarantined() == 1
    with pytest.raises(NotFound):  # withdrawn: the row went too
        store.info(caller, info.id)


def test_the_same_bytes_written_again_are_verified_again_and_served(tmp_path) -> None:
    store, objects = _store(tmp_path)
    caller, gen = _caller(store, tmp_path)
    data = b"same bytes, another version" * 1000
    info = store.register(caller, gen, NewArtifact("image/png", data))
    objects.outsider_write(info.sha256, data)  # a new version of the same bytes
    objects.calls.clear()
    assert store.read(caller, info.uri).data == data
    # The read-ahead saw another version; the slow way looked it up and verified it in full.
    assert objects.calls["head"] == 1 and objects.calls["get_range"] >= 3
    objects.calls.clear()
    assert store.read(caller, info.uri).data == data
    assert objects.calls == {"get_range": 1}  # verified once per version


def test_bytes_written_again_while_they_were_verified_are_looked_at_again(tmp_path) -> None:
    store, objects = _store(tmp_path)
    caller, gen = _caller(store, tmp_path)
    data = b"v" * (3 * BS)
    info = store.register(caller, gen, NewArtifact("image/png", data))
    store.forget_verified()
    real = store.blobs.verify
    rewrites = []

    def meanwhile(sha, digests, version):  # type: ignore[no-untyped-def]
        if not rewrites:
            rewrites.append(1)
            objects.outsider_write(sha, data)  # same bytes, new version, mid-verification
        return real(sha, digests, version)

    store.blobs.verify = meanwhile  # type: ignore[method-assign]
    assert store.info(caller, info.id).sha256 == info.sha256  # not withdrawn
    assert objects.names() == [info.sha256] and objects.names("quarantine") == []


def test_a_shared_store_leases_its_uploads_and_gives_them_back_in_the_commit(tmp_path) -> None:
    store, objects = _store(tmp_path, shared=True)
    caller, gen = _caller(store, tmp_path)
    info = store.register(caller, gen, NewArtifact("image/png", b"leased"))
    from sqlalchemy import func, select

    from godot_mcp.store.db import read_session
    from godot_mcp.store.models import BlobUpload

    with read_session(store.engine) as s:
        assert s.scalar(select(func.count()).select_from(BlobUpload)) == 0
    store.release_where(Artifact.id == info.id)
    assert objects.names() == []  # no row, no lease: gone at once


def test_a_young_unreferenced_object_of_a_shared_store_waits_for_the_grace(tmp_path) -> None:
    store, objects = _store(tmp_path, shared=True)
    young, old = b"another host's upload", b"an orphan"
    objects.outsider_write(hashlib.sha256(young).hexdigest(), young)
    objects.outsider_write(hashlib.sha256(old).hexdigest(), old, age_s=3600)
    report = reconcile(store)
    assert report.orphan_blobs_removed == 1
    assert objects.names() == [hashlib.sha256(young).hexdigest()]


def test_reconcile_removes_orphans_and_strays_and_quarantines_mismatches(tmp_path) -> None:
    store, objects = _store(tmp_path)
    caller, gen = _caller(store, tmp_path)
    keep = store.register(caller, gen, NewArtifact("image/png", b"keep"))
    bad = store.register(caller, gen, NewArtifact("image/png", b"bad!"))
    objects.outsider_write(bad.sha256, b"BAD!")
    objects.outsider_write("not-a-sha", b"?")
    objects.outsider_write("ab" * 32, b"no row")
    (tmp_path / "staging" / "stage-dead").write_bytes(b"half")
    report = reconcile(store)
    assert (report.mismatched_dropped, report.orphan_blobs_removed) == (1, 1)
    assert (report.stray_files_removed, report.temp_files_removed) == (1, 1)
    assert objects.names() == [keep.sha256] and len(objects.names("quarantine")) == 1


def test_an_unreachable_store_keeps_its_deletions_pending_and_loses_nothing(tmp_path) -> None:
    for shared in (False, True):
        store, objects = _store(tmp_path / str(shared), shared=shared)
        caller, gen = _caller(store, tmp_path)
        old = store.register(caller, gen, NewArtifact("image/png", b"old"))
        objects.down = True
        assert store.release_where(Artifact.id == old.id) == 1  # committed: not reported
        assert old.sha256 in store._pending_gc and objects.names() == [old.sha256]
        objects.down = False
        new = store.register(caller, gen, NewArtifact("image/png", b"new"))
        assert objects.names() == [new.sha256] and not store._pending_gc


def test_bytes_that_are_not_their_promise_are_refused_and_leave_nothing(tmp_path) -> None:
    store, objects = _store(tmp_path, store_budget_bytes=100)
    caller, gen = _caller(store, tmp_path)
    with pytest.raises(TooLarge):
        store.register(caller, gen, NewArtifact("image/png", b"x" * 101))
    promised = NewArtifact("image/png", b"abc", expected_sha256="00" * 32)
    with pytest.raises(Exception, match="do not match"):
        store.register(caller, gen, promised)
    assert objects.names() == [] and store.bytes_in_use() == 0
