"""The command line on a shared PostgreSQL database: one store seen from two state dirs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading

import anyio
import httpx2
import pytest
import sqlalchemy
from mcp import MCPError

from godot_mcp.errors import ConfigError, DatabaseBusy, DatabaseUnavailable
from godot_mcp.store.db import database_errors
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import NewArtifact
from tests.store.conftest import stdio_caller
from tests.support import postgres
from tests.support.projects import make_project
from tests.support.rawmcp import raw_session
from tests.support.servers import ROOT, run_admin, server_env, start_http, stdio_client

# slow: starts servers on PostgreSQL.
pytestmark = pytest.mark.slow


def test_servers_on_one_database_share_its_tokens_and_its_one_blob_store(
    tmp_path, pg_server
) -> None:
    url = pg_server.create_database()
    state = str(tmp_path / "a")
    added = run_admin("token", "add", "alice", "--state-dir", state, "--database-url", url)
    assert added.returncode == 0, added.stderr
    listed = run_admin("token", "list", "--json", "--state-dir", state, "--database-url", url)
    assert listed.returncode == 0, listed.stderr
    assert [t["principal"] for t in json.loads(listed.stdout)] == ["alice"]
    assert not (tmp_path / "a" / "store.db").exists()  # nothing of it in SQLite
    # What touches bytes claims the database for its blob directory (serve, reconcile).
    claimed = run_admin("reconcile", "--state-dir", state, "--database-url", url)
    assert claimed.returncode == 0, claimed.stderr
    # Tokens need no bytes: any state dir may manage them. Another state dir has another
    # blob directory, though: what touches bytes there is refused.
    other = ["--state-dir", str(tmp_path / "b"), "--database-url", url]
    listed = run_admin("token", "list", "--json", *other)
    assert [t["principal"] for t in json.loads(listed.stdout)] == ["alice"], listed.stderr
    refused = run_admin("reconcile", *other)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "godot-mcp-admin: error: this database belongs to another blob store (another "
        "host's or another state dir's blob directory): every server on one database uses "
        "the same one"
    ), refused.stderr


def test_a_store_refuses_a_database_of_another_blob_store(tmp_path, pg_server) -> None:
    url = pg_server.create_database()
    first = ArtifactStore(tmp_path / "a", database_url=url)
    again = ArtifactStore(tmp_path / "a", database_url=url)  # the same state dir: fine
    with pytest.raises(ConfigError, match="belongs to another blob store"):
        ArtifactStore(tmp_path / "b", database_url=url)
    # A copy of the state dir elsewhere (another host, a restored backup) keeps its id...
    shutil.copytree(tmp_path / "a", tmp_path / "copy")
    ArtifactStore(tmp_path / "copy", database_url=url).close()
    # ...and the same path on another host, with other bytes, does not have it.
    shutil.rmtree(tmp_path / "a" / "blobs")
    with pytest.raises(ConfigError, match="belongs to another blob store"):
        ArtifactStore(tmp_path / "a", database_url=url)
    first.close()
    again.close()


def test_an_unreachable_database_is_one_line_and_exit_2(tmp_path) -> None:
    url = "postgresql+psycopg://postgres@127.0.0.1:1/nothing"
    done = run_admin("token", "list", "--state-dir", str(tmp_path / "s"), "--database-url", url)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "godot-mcp-admin: error: cannot open the store's database: "
    ), done.stderr


def test_a_database_url_of_another_kind_is_refused(tmp_path) -> None:
    done = run_admin(
        "reconcile", "--state-dir", str(tmp_path / "s"), "--database-url", "mysql://x/y"
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "godot-mcp-admin: error: the database must be SQLite or PostgreSQL, not 'mysql'"
    )


def test_serve_against_an_unreachable_database_is_one_line_and_exit_2(tmp_path) -> None:
    project = make_project(tmp_path / "project")
    url = "postgresql+psycopg://postgres@127.0.0.1:1/nothing"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "godot_mcp.cli.serve",
            "serve",
            "--project",
            str(project),
            "--state-dir",
            str(tmp_path / "s"),
            "--database-url",
            url,
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=server_env(),
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "godot-mcp: error: cannot open the store's database: "
    ), done.stderr


def test_a_database_outage_is_unavailable_and_the_store_recovers_with_nothing_lost(
    tmp_path,
) -> None:
    if postgres.binaries() is None:
        pytest.skip("SKIPPED LOUDLY: PostgreSQL is not installed")
    server = postgres.start()  # its own server: this test stops it
    try:
        url = server.create_database()
        store = ArtifactStore(tmp_path / "state", database_url=url)
        caller, gen = stdio_caller(store, make_project(tmp_path / "p"))
        kept = store.register(caller, gen, NewArtifact("image/png", b"before the outage"))
        server.kill()
        with pytest.raises(DatabaseUnavailable, match="cannot be reached"):
            store.register(caller, gen, NewArtifact("image/png", b"during"))
        with pytest.raises(DatabaseUnavailable):
            store.read(caller, kept.uri)
        with pytest.raises(DatabaseUnavailable):
            store.projects.observe(tmp_path / "p")
        server.restart()
        assert store.read(caller, kept.uri).data == b"before the outage"
        after = store.register(caller, gen, NewArtifact("image/png", b"after"))
        assert store.read(caller, after.uri).data == b"after"
        assert store.bytes_in_use() == len(b"before the outage") + len(b"after")
        store.close()
    finally:
        server.stop()


def test_an_http_server_answers_503_while_its_database_is_down_and_recovers(tmp_path) -> None:
    if postgres.binaries() is None:
        pytest.skip("SKIPPED LOUDLY: PostgreSQL is not installed")
    server = postgres.start()  # its own server: this test stops it
    http = None
    try:
        url = server.create_database()
        state = tmp_path / "state"
        added = run_admin("token", "add", "alice", "--state-dir", str(state), "--database-url", url)
        assert added.returncode == 0, added.stderr
        token = added.stdout.strip()
        http = start_http(make_project(tmp_path / "p"), state, "--database-url", url, tokens={})
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
        }
        up = httpx2.post(http.url, json=body, headers=headers, timeout=30)
        assert up.status_code != 503, up.text
        server.kill()
        down = httpx2.post(http.url, json=body, headers=headers, timeout=30)
        assert down.status_code == 503 and down.headers["retry-after"] == "5"
        assert down.json()["error"] == "unavailable"
        # The client learns what, not where: no host, port or role of the deployment.
        assert down.json()["message"] == "the store's database cannot be reached"
        assert http.process.poll() is None  # still serving
        server.restart()
        again = httpx2.post(http.url, json=body, headers=headers, timeout=30)
        assert again.status_code == up.status_code, again.text
        log = http.log_path.read_text(errors="replace")
        assert "Traceback" not in log and "HTTP request answered 503" in log
        assert f"port {server.port} failed" in log  # the operator learns where
    finally:
        if http is not None:
            http.stop()
        server.stop()


@pytest.mark.anyio
async def test_a_session_that_ends_while_the_database_is_down_is_released_when_it_is_back(
    tmp_path,
) -> None:
    if postgres.binaries() is None:
        pytest.skip("SKIPPED LOUDLY: PostgreSQL is not installed")
    server = postgres.start()  # its own server: this test stops it
    http = None
    try:
        url = server.create_database()
        state = tmp_path / "state"
        token = run_admin("token", "add", "alice", "--state-dir", str(state), "--database-url", url)
        assert token.returncode == 0, token.stderr
        idle = ("--http-session-idle-seconds", "2")
        http = start_http(
            make_project(tmp_path / "p"), state, "--database-url", url, *idle, tokens={}
        )
        with anyio.fail_after(120):
            async with raw_session(http.url, token.stdout.strip()) as s:
                made = await s.call("test_produce", {"size": 4096})
                assert made["outcome"] == "ok", made
                assert _live_artifacts(url) == 1
                server.kill()
                # No request from now on: the session ends by idleness, its database down.
                log = http.log_path
                while "waits for the store" not in log.read_text(errors="replace"):
                    await anyio.sleep(0.1)
                server.restart()
                while _live_artifacts(url) != 0:
                    await anyio.sleep(0.2)
                while "artifacts released: the store answers again" not in log.read_text():
                    await anyio.sleep(0.1)
        assert http.process.poll() is None
        assert "Traceback" not in http.log_path.read_text(errors="replace")
    finally:
        if http is not None:
            http.stop()
        server.stop()


def _live_artifacts(url: str) -> int:
    """How many artifact rows the database holds (-1 while it does not answer yet)."""
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as c:
            return int(c.execute(sqlalchemy.text("SELECT count(*) FROM artifacts")).scalar_one())
    except sqlalchemy.exc.OperationalError:
        return -1
    finally:
        engine.dispose()


def test_a_database_that_refuses_the_connection_says_why_in_one_line(tmp_path, pg_server) -> None:
    url = pg_server.create_database() + "?foo=bar"
    done = run_admin("token", "list", "--state-dir", str(tmp_path / "s"), "--database-url", url)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert lines[0].startswith("godot-mcp-admin: error: the store database cannot be used: ")
    assert "foo" in lines[0]


@pytest.mark.anyio
async def test_resources_list_says_unavailable_while_the_database_is_down(tmp_path) -> None:
    """An empty list would tell the caller it has nothing: the answer says the store cannot
    be asked, and the artifact is listed again once the database is back."""
    if postgres.binaries() is None:
        pytest.skip("SKIPPED LOUDLY: PostgreSQL is not installed")
    server = postgres.start()  # its own server: this test stops it
    try:
        url = server.create_database()
        project = make_project(tmp_path / "p")
        with anyio.fail_after(120):
            async with stdio_client(project, tmp_path / "state", "--database-url", url) as c:
                made = await c.call_tool("test_produce", {"size": 4096})
                assert made.structured_content["outcome"] == "ok", made.structured_content
                (listed,) = (await c.list_resources()).resources
                server.kill()
                with pytest.raises(MCPError) as caught:
                    await c.list_resources()
                assert caught.value.error.data == {"outcome": "unavailable"}
                assert caught.value.error.message == (
                    "Unavailable: the store's database cannot be reached"
                )
                server.restart()
                (again,) = (await c.list_resources()).resources
                assert again.uri == listed.uri
    finally:
        server.stop()


def test_database_errors_say_what_happened(pg_server) -> None:
    """A statement timeout and a deadlock are the database being busy (try again); a
    refusal is a refusal; neither is "cannot be reached" (a real PostgreSQL)."""
    engine = sqlalchemy.create_engine(pg_server.create_database())
    try:
        with engine.begin() as c:
            c.execute(sqlalchemy.text("CREATE TABLE t (id int PRIMARY KEY)"))
            c.execute(sqlalchemy.text("INSERT INTO t VALUES (1), (2)"))
        with pytest.raises(DatabaseBusy) as caught, database_errors(), engine.begin() as c:
            c.execute(sqlalchemy.text("SET LOCAL statement_timeout = 50"))
            c.execute(sqlalchemy.text("SELECT pg_sleep(2)"))
        assert caught.value.message == (
            "the store's database is busy (a statement timeout); try again"
        )
        # Two transactions taking two rows in opposite orders: one of them is the victim.
        barrier = threading.Barrier(2, timeout=20)
        errors: list[BaseException] = []

        def take(first: int, second: int) -> None:
            try:
                with database_errors(), engine.begin() as c:
                    c.execute(sqlalchemy.text(f"SELECT * FROM t WHERE id = {first} FOR UPDATE"))
                    barrier.wait()
                    c.execute(sqlalchemy.text(f"SELECT * FROM t WHERE id = {second} FOR UPDATE"))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=take, args=p) for p in ((1, 2), (2, 1))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        (victim,) = errors
        assert isinstance(victim, DatabaseBusy), victim
        assert victim.message == "the store's database is busy (a deadlock); try again"
    finally:
        engine.dispose()
