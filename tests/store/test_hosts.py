"""Several hosts on one shared store (real PostgreSQL and SeaweedFS): projects are (host, root),
and another host's exports are judged by its heartbeat, never by a pid."""

from __future__ import annotations

from sqlalchemy import update

from godot_mcp.features.export.recovery import settle_interrupted
from godot_mcp.store.db import write_session
from godot_mcp.store.exports import ExportRecords
from godot_mcp.store.hosts import GONE_MESSAGE, beat, database_now_us, settle_gone_hosts
from godot_mcp.store.models import Export, Host
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, NewArtifact
from tests.support.projects import make_project


def _two_hosts(tmp_path, pg_server, s3_server):
    url = pg_server.create_database()
    blobs = s3_server.url(s3_server.create_bucket())
    return [
        ArtifactStore(tmp_path / name, database_url=url, blob_store_url=blobs)
        for name in ("host-a", "host-b")
    ]


def test_the_same_project_path_on_two_hosts_is_two_projects(tmp_path, pg_server, s3_server):
    a, b = _two_hosts(tmp_path, pg_server, s3_server)
    try:
        project = make_project(tmp_path / "game")
        on_a, on_b = a.projects.observe(project), b.projects.observe(project)
        assert on_a.id != on_b.id and a.host_id != b.host_id
        made = a.register(
            Caller("local", None, None, on_a.id), on_a.generation, NewArtifact("image/png", b"x")
        )
        assert b.projects.advance(project).generation == on_b.generation + 1
        assert a.projects.observe(project) == on_a  # b's reload is not a's
        assert a.read(Caller("local", None, None, on_a.id), made.uri).data == b"x"
    finally:
        a.close()
        b.close()


def test_another_hosts_export_is_settled_by_its_heartbeat_not_by_a_pid(
    tmp_path, pg_server, s3_server
):
    a, b = _two_hosts(tmp_path, pg_server, s3_server)
    try:
        state = a.projects.observe(make_project(tmp_path / "game"))
        caller = Caller("alice", "s1", "l1", state.id)
        # A pid and start time no process on host b has: a pid check there would call it dead.
        ExportRecords(a).create("e" * 32, caller, state.generation, "Pack", "pack", (1, "0"))
        beat(a)
        assert settle_interrupted(b) == {"exports_interrupted": 0}
        assert ExportRecords(b).state("e" * 32) == "running"
        _age(a, seconds=30)  # its last beat 30 s ago (by the database's clock): alive
        assert settle_gone_hosts(b) == 0
        _age(a, seconds=65)  # silent for 65 s: gone
        beat(b)
        assert settle_gone_hosts(b) == 1
        record = ExportRecords(b).get("e" * 32)
        assert record is not None
        assert (record.state, record.error) == ("interrupted", GONE_MESSAGE)
        assert record.owner_host == a.host_id
    finally:
        a.close()
        b.close()


def _age(store: ArtifactStore, seconds: int) -> None:
    """As if ``store``'s host beat ``seconds`` ago and its exports were made before that."""
    with write_session(store.engine) as s:
        now = database_now_us(s, store)
        s.execute(
            update(Host).where(Host.id == store.host_id).values(beat_us=now - seconds * 10**6)
        )
        s.execute(update(Export).values(created_us=now - (seconds + 1) * 10**6))
