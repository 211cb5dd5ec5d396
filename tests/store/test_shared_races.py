"""What an attack on the shared store found, kept fixed (real PostgreSQL and SeaweedFS): a
store never adopts a bucket prefix that lacks its id, stores cannot nest, a verdict reached
while hashing never withdraws a blob registered again since, and a clean-up that fails after
a commit never fails the registration. Interleavings are forced by wrapping one call."""

from __future__ import annotations

import gc
import re

import pytest

from godot_mcp.errors import ConfigError, NotFound
from godot_mcp.store.blobs import Blocks, StaleMark, block_digest
from godot_mcp.store.models import Artifact
from godot_mcp.store.objects import Version
from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.s3 import parse_blob_store_url
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, NewArtifact
from tests.support.projects import make_project
from tests.support.rawblobs import RawBlobs


def _open(tmp_path, name: str, url: str, blobs: str) -> ArtifactStore:
    return ArtifactStore(tmp_path / name, database_url=url, blob_store_url=blobs)


def _fresh(pg_server, s3_server) -> tuple[str, str]:
    """A new database and a new bucket: their URLs."""
    return pg_server.create_database(), s3_server.url(s3_server.create_bucket())


def _caller(store: ArtifactStore, tmp_path) -> tuple[Caller, int]:
    state = store.projects.observe(make_project(tmp_path / "game"))
    return Caller("alice", "sess", "launch", state.id), state.generation


def test_a_store_in_use_refuses_a_bucket_prefix_without_its_id(
    tmp_path, pg_server, s3_server
) -> None:
    url, bucket = pg_server.create_database(), s3_server.create_bucket()
    store = _open(tmp_path, "a", url, s3_server.url(bucket, "prod"))
    caller, gen = _caller(store, tmp_path)
    info = store.register(caller, gen, NewArtifact("image/png", b"pixels"))
    store.close()
    for wrong in ("Prod", "prod/x"):  # a typo, an emptied or new bucket prefix
        with pytest.raises(ConfigError, match="belongs to another blob store"):
            _open(tmp_path, "a", url, s3_server.url(bucket, wrong))
    again = _open(tmp_path, "a", url, s3_server.url(bucket, "prod"))
    try:
        assert again.read(caller, info.uri).data == b"pixels"  # nothing was dropped
    finally:
        again.close()
    # Before any bytes too: the database records its bucket and prefix, not only their id.
    url, bucket = pg_server.create_database(), s3_server.create_bucket()
    _open(tmp_path, "b", url, s3_server.url(bucket, "prod")).close()
    with pytest.raises(ConfigError, match="belongs to another blob store"):
        _open(tmp_path, "c", url, s3_server.url(bucket, "prd"))


def test_an_sqlite_file_shared_by_two_state_dirs_is_claimed_like_a_server(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    ArtifactStore(tmp_path / "a", database_url=url).close()
    with pytest.raises(ConfigError, match="belongs to another blob store"):
        ArtifactStore(tmp_path / "b", database_url=url)


def test_a_verified_object_made_shorter_is_refused_like_an_unknown_one(
    tmp_path, pg_server, s3_server
) -> None:
    store = _open(tmp_path, "a", *_fresh(pg_server, s3_server))
    try:
        caller, gen = _caller(store, tmp_path)
        info = store.register(caller, gen, NewArtifact("image/png", bytes(300_000)))
        RawBlobs(store).write(info.sha256, b"short")  # a range past its end: 416 from S3
        other = Caller("mallory", "s2", "launch", caller.project_id)
        for who in (other, caller):
            with pytest.raises(NotFound):
                store.read(who, f"{info.uri}?offset=200000&length=1000")
    finally:
        store.close()


def test_a_withdrawal_decided_before_the_same_bytes_were_registered_again_is_void(
    tmp_path, pg_server, s3_server
) -> None:
    url, blobs = _fresh(pg_server, s3_server)
    host, reader = _open(tmp_path, "a", url, blobs), _open(tmp_path, "r", url, blobs)
    try:
        caller, gen = _caller(host, tmp_path)
        data = b"bytes someone damaged, then uploaded again"
        first = host.register(caller, gen, NewArtifact("image/png", data))
        RawBlobs(host).write(first.sha256, b"X" * len(data))  # damaged in the bucket
        real, again = reader.blobs.verify, {}

        def meanwhile(sha: str, digests: bytes, version: Version) -> bool:
            judged = real(sha, digests, version)  # damaged: not intact
            again["info"] = host.register(caller, gen, NewArtifact("image/png", data))
            return judged

        reader.blobs.verify = meanwhile  # type: ignore[method-assign]
        with pytest.raises(NotFound):
            reader.read(caller, first.uri)
        assert host.read(caller, again["info"].uri).data == data  # its upload repaired it
    finally:
        host.close()
        reader.close()


def test_stores_cannot_nest_and_a_listing_never_reaches_below_its_prefix(
    tmp_path, pg_server, s3_server
) -> None:
    # The most natural prefixes are names, not nesting: "blobs" is fine where no store is.
    for plain in ("s3://bucket-1/team/blobs", "s3://bucket-1/blobs", "s3://bucket-1/a/quarantine"):
        assert parse_blob_store_url(plain).prefix == plain.split("/", 3)[3]
    with pytest.raises(ConfigError, match=r"must not name \.store-id"):
        parse_blob_store_url("s3://bucket-1/a/.store-id/b")
    bucket = s3_server.create_bucket()
    inner = _open(tmp_path, "inner", pg_server.create_database(), s3_server.url(bucket, "t/blobs"))
    caller, gen = _caller(inner, tmp_path)
    data = b"a blob of the store at t/blobs"
    info = inner.register(caller, gen, NewArtifact("image/png", data))
    assert inner.read(caller, info.uri).data == data
    inner.close()
    # A store at t would hold t/blobs's keys in its own blobs/ (and sweep its marker away).
    with pytest.raises(ConfigError) as caught:
        _open(tmp_path, "outer", pg_server.create_database(), s3_server.url(bucket, "t"))
    assert caught.value.message == (
        f"the blob store would share keys with the store at s3://{bucket}/t/blobs (one "
        "inside the other's blobs/ or quarantine/): choose a prefix beside it"
    )
    # ...and a store inside the blobs/ or quarantine/ of one at u is refused the same way.
    _open(tmp_path, "u", pg_server.create_database(), s3_server.url(bucket, "u")).close()
    for nested in ("u/blobs", "u/quarantine/x"):
        with pytest.raises(ConfigError, match=re.escape(f"the store at s3://{bucket}/u ")):
            _open(
                tmp_path,
                nested.replace("/", "-"),
                pg_server.create_database(),
                s3_server.url(bucket, nested),
            )
    # Beside them is fine.
    _open(tmp_path, "beside", pg_server.create_database(), s3_server.url(bucket, "v")).close()
    store = _open(
        tmp_path, "a", pg_server.create_database(), s3_server.url(s3_server.create_bucket())
    )
    try:
        raw = RawBlobs(store)
        raw.write("deeper/" + "ab" * 32, b"not this store's to judge")
        report = reconcile(store, orphan_grace_s=0)
        assert (report.stray_files_removed, report.orphan_blobs_removed) == (0, 0)
        assert raw.read("deeper/" + "ab" * 32) == b"not this store's to judge"
    finally:
        store.close()


def test_reconcile_keeps_a_blob_released_and_registered_again_while_it_hashed(
    tmp_path, pg_server, s3_server
) -> None:
    url, blobs = _fresh(pg_server, s3_server)
    host, other = _open(tmp_path, "a", url, blobs), _open(tmp_path, "r", url, blobs)
    try:
        caller, gen = _caller(host, tmp_path)
        data = b"the same screenshot"
        host.register(caller, gen, NewArtifact("image/png", data))
        real, again = other.blobs.hash_blob, {}

        def meanwhile(sha: str):
            host.release_where(Artifact.session_id == "sess")  # its object goes at once
            judged = real(sha)  # the GET finds nothing: "missing"
            again["info"] = host.register(caller, gen, NewArtifact("image/png", data))
            return judged

        other.blobs.hash_blob = meanwhile  # type: ignore[method-assign]
        report = reconcile(other)
        assert report.missing_dropped == 0
        assert host.read(caller, again["info"].uri).data == data
    finally:
        host.close()
        other.close()


def test_a_read_never_withdraws_a_blob_registered_again_since_it_resolved(
    tmp_path, pg_server, s3_server
) -> None:
    url, blobs = _fresh(pg_server, s3_server)
    host, reader = _open(tmp_path, "a", url, blobs), _open(tmp_path, "r", url, blobs)
    try:
        caller, gen = _caller(host, tmp_path)
        data = b"bytes registered twice"
        first = host.register(caller, gen, NewArtifact("image/png", data))
        real, again = reader.blobs.verify, {}

        def meanwhile(sha: str, digests: bytes, version: Version) -> bool:
            host.release_where(Artifact.session_id == "sess")
            judged = real(sha, digests, version)  # gone: not intact
            again["info"] = host.register(caller, gen, NewArtifact("image/png", data))
            return judged

        reader.blobs.verify = meanwhile  # type: ignore[method-assign]
        with pytest.raises(Exception, match="not found"):
            reader.read(caller, first.uri)
        assert host.read(caller, again["info"].uri).data == data  # the new row stands
    finally:
        host.close()
        reader.close()


def test_a_clean_up_that_fails_after_the_commit_does_not_fail_the_registration(
    tmp_path, pg_server, s3_server
) -> None:
    store = _open(
        tmp_path, "a", pg_server.create_database(), s3_server.url(s3_server.create_bucket())
    )
    try:
        caller, gen = _caller(store, tmp_path)
        old = store.register(caller, gen, NewArtifact("image/png", b"old"))

        def lost_credentials(sha: str) -> None:
            raise ConfigError("no S3 credentials: set AWS_ACCESS_KEY_ID")

        store.blobs.delete = lost_credentials  # type: ignore[method-assign]
        store.release_where(Artifact.id == old.id)  # its object cannot go now: kept pending
        new = store.register(caller, gen, NewArtifact("image/png", b"new"))
        assert store.read(caller, new.uri).data == b"new"
        assert old.sha256 in store._pending_gc
    finally:
        store.close()


def _checked_out(store: ArtifactStore) -> int:
    """Connections of the store's S3 client that are out of its pool (a body not closed)."""
    manager = store.blobs.objects.client._endpoint.http_session._manager  # type: ignore[attr-defined]
    return sum(p.pool.maxsize - p.pool.qsize() for p in manager.pools._container.values())


def test_no_early_return_leaves_an_s3_response_open(tmp_path, pg_server, s3_server) -> None:
    """A verification that finds a bad first block, a read of an object uploaded again
    since, and the marker read each give their GET's connection back: 30 of each leave none
    out of the client's pool."""
    store = _open(tmp_path, "leaks", *_fresh(pg_server, s3_server))
    try:
        caller, gen = _caller(store, tmp_path)
        bs = store.blobs.block_size
        data = bytes(range(256)) * (4 << 20 >> 8)  # 4 MiB
        info = store.register(caller, gen, NewArtifact("image/png", data))
        sha = info.sha256
        digests = Blocks(
            b"".join(block_digest(data[i : i + bs]) for i in range(0, len(data), bs)), bs
        )
        version = store.blobs.head(sha, len(data))
        assert version is not None and store.blobs.verify(sha, digests, version)
        wrong = Blocks(b"\0" * 8 + digests.digests[8:], bs)
        stale = Version(len(data), "another ETag")
        counts = []
        for _ in range(30):
            assert store.blobs.verify(sha, wrong, version) is False  # returns at the first block
        counts.append(_checked_out(store))
        for _ in range(30):
            with pytest.raises(StaleMark):
                store.blobs.read(sha, 0, 10, digests, stale)
        counts.append(_checked_out(store))
        for _ in range(30):
            assert store.blobs.objects.read_marker()
        gc.collect()
        counts.append(_checked_out(store))
        assert counts == [0, 0, 0]
    finally:
        store.close()
