from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest
from freezegun import freeze_time

from godot_mcp.errors import NotFound, TooLarge
from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Limits, NewArtifact
from tests.store.conftest import RawBlobs, make_project, stdio_caller

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def test_an_artifact_is_readable_until_its_fifteen_minutes_end(tmp_path, backend) -> None:
    with freeze_time(T0) as clock:
        store = ArtifactStore(tmp_path / "state", **backend.options)
        caller, gen = stdio_caller(store, make_project(tmp_path / "p"))
        info = store.register(caller, gen, NewArtifact("image/png", b"pixels"))
        assert info.expires_at == T0 + timedelta(minutes=15)
        clock.tick(timedelta(minutes=14, seconds=59))
        assert store.read(caller, info.uri).data == b"pixels"
        assert [i.id for i in store.list(caller).items] == [info.id]
        clock.tick(timedelta(seconds=1))
        with pytest.raises(NotFound):
            store.read(caller, info.uri)
        assert store.list(caller).items == []
        clock.tick(timedelta(hours=3))
        with pytest.raises(NotFound):
            store.read(caller, info.uri)


def test_expired_bytes_go_back_to_the_budget_at_the_next_registration(tmp_path, backend) -> None:
    with freeze_time(T0) as clock:
        store = ArtifactStore(
            tmp_path / "state", Limits(store_budget_bytes=1000), **backend.options
        )
        caller, gen = stdio_caller(store, make_project(tmp_path / "p"))
        old = store.register(caller, gen, NewArtifact("image/png", os.urandom(900)))
        with pytest.raises(TooLarge):
            store.register(caller, gen, NewArtifact("image/png", os.urandom(900)))
        clock.tick(timedelta(minutes=15))
        assert store.bytes_in_use() == 900  # not yet given back: nothing registered since
        new = store.register(caller, gen, NewArtifact("image/png", os.urandom(900)))
        assert store.bytes_in_use() == 900
        assert [b for b in store.blobs.iter_blobs()] == [new.sha256]
        assert old.sha256 != new.sha256


def test_a_restart_removes_expired_artifacts_from_disk(tmp_path, backend) -> None:
    with freeze_time(T0) as clock:
        store = ArtifactStore(tmp_path / "state", **backend.options)
        caller, gen = stdio_caller(store, make_project(tmp_path / "p"))
        gone = store.register(caller, gen, NewArtifact("image/png", b"old bytes"))
        clock.tick(timedelta(minutes=10))
        kept = store.register(caller, gen, NewArtifact("image/png", b"new bytes"))
        store.close()
        clock.tick(timedelta(minutes=6))
        store = ArtifactStore(tmp_path / "state", **backend.options)
        report = reconcile(store)
        assert report.expired_released == 1 and report.artifacts_kept == 1
        assert list(store.blobs.iter_blobs()) == [kept.sha256]
        assert RawBlobs(store).read(gone.sha256) is None
        assert store.read(caller, kept.uri).data == b"new bytes"
        assert store.bytes_in_use() == len(b"new bytes")
