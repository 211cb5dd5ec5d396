"""Three HTTP servers, each with its own state dir (three hosts), on one PostgreSQL database
and one S3 bucket (real ones): one budget, one set of tokens, bytes bound to the launch that
made them, kill -9 of one server mid-registration, reconcile while the others serve."""

from __future__ import annotations

import hashlib
import signal

import anyio
import pytest
import sqlalchemy

from godot_mcp.store.ids import new_id
from tests.support.projects import make_project
from tests.support.rawmcp import RawSession, raw_session
from tests.support.seaweed import Seaweed
from tests.support.servers import HttpServer, run_admin, start_http

# slow: starts three servers.
pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SIZE = 100_000
BUDGET = 12 * SIZE


def _start(
    tmp_path, pg_server, s3_server: Seaweed, n: int = 3, last_env: dict[str, str] | None = None
) -> tuple[list[HttpServer], str]:
    url = pg_server.create_database()
    both = ["--database-url", url, "--blob-store", s3_server.url(s3_server.create_bucket())]
    token = run_admin("token", "add", "alice", "--state-dir", str(tmp_path / "host0"), *both)
    assert token.returncode == 0, token.stderr
    project = make_project(tmp_path / "game")
    servers = [
        start_http(
            project,
            tmp_path / f"host{i}",
            *both,
            "--store-budget-bytes",
            str(BUDGET),
            tokens={},
            env=last_env if i == n - 1 else None,
        )
        for i in range(n)
    ]
    return servers, token.stdout.strip()


def _rows(url: str, sql: str) -> list[tuple]:
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as c:
            return [tuple(r) for r in c.execute(sqlalchemy.text(sql))]
    finally:
        engine.dispose()


def _url(server: HttpServer) -> str:
    argv = server.process.args
    return str(argv[list(argv).index("--database-url") + 1])


async def test_three_servers_share_one_budget_and_one_set_of_tokens(
    tmp_path, pg_server, s3_server
) -> None:
    servers, token = _start(tmp_path, pg_server, s3_server)
    try:
        # A token added on one host while the servers run works on all of them.
        both = ["--database-url", _url(servers[0]), "--blob-store", _blob_url(servers[0])]
        later = run_admin("token", "add", "bob", "--state-dir", str(tmp_path / "host2"), *both)
        assert later.returncode == 0, later.stderr
        results: list[str] = []

        async def produce(server: HttpServer, who: str, seed: int) -> None:
            async with raw_session(server.url, who) as s:
                for k in range(8):
                    got = await s.call("test_produce", {"size": SIZE, "seed": seed * 100 + k})
                    results.append(got["outcome"])

        with anyio.fail_after(180):
            async with anyio.create_task_group() as tg:
                for i, server in enumerate(servers):
                    for j, who in enumerate((token, later.stdout.strip())):
                        tg.start_soon(produce, server, who, 10 * i + j)
        # 48 registrations of SIZE against a budget of 12: exactly 12 fit, never more.
        assert results.count("ok") == 12 and results.count("too_large") == 36, results
        live = _rows(_url(servers[0]), "SELECT count(*), coalesce(sum(size), 0) FROM artifacts")
        assert live == [(12, 12 * SIZE)]
    finally:
        for server in servers:
            server.stop()


def _blob_url(server: HttpServer) -> str:
    argv = list(server.process.args)
    return str(argv[argv.index("--blob-store") + 1])


async def test_an_artifact_of_one_server_is_unknown_to_the_others(
    tmp_path, pg_server, s3_server
) -> None:
    servers, token = _start(tmp_path, pg_server, s3_server, n=2)
    try:
        with anyio.fail_after(120):
            async with (
                raw_session(servers[0].url, token) as a,
                raw_session(servers[1].url, token) as b,
            ):
                made = await a.call("test_produce", {"size": 5000, "seed": 3})
                assert made["outcome"] == "ok", made
                uri = made["artifact"]["uri"]
                ok = await a.request("resources/read", {"uri": uri})
                assert ok["result"]["contents"][0]["_meta"]["sha256"] == made["artifact"]["sha256"]
                theirs = await b.request("resources/read", {"uri": uri})
                unknown_uri = f"godot-mcp://artifacts/{new_id()}"
                unknown = await b.request("resources/read", {"uri": unknown_uri})
                assert theirs["error"]["message"] == unknown["error"]["message"]
                assert theirs["error"]["code"] == unknown["error"]["code"]
                assert {**theirs["error"]["data"], "uri": "-"} == {
                    **unknown["error"]["data"],
                    "uri": "-",
                }
    finally:
        for server in servers:
            server.stop()


async def test_kill_9_of_one_server_mid_registration_and_reconcile_while_others_serve(
    tmp_path, pg_server, s3_server
) -> None:
    # The third server dies by kill -9 right after its third upload, before that row commits.
    kill_at = {"GODOT_MCP_KILL_AT": "publish.renamed:3"}
    servers, token = _start(tmp_path, pg_server, s3_server, last_env=kill_at)
    victim, survivors = servers[2], servers[:2]
    url, blobs = _url(victim), _blob_url(victim)
    try:
        with anyio.fail_after(240):
            async with raw_session(survivors[0].url, token) as keep:
                kept = await keep.call("test_produce", {"size": SIZE, "seed": 1})
                assert kept["outcome"] == "ok", kept

                async def flood(s: RawSession) -> None:
                    for k in range(50):
                        try:
                            await s.call("test_produce", {"size": 3 * SIZE, "seed": 500 + k})
                        except Exception:  # the server died under the call
                            return

                async with raw_session(victim.url, token) as doomed:
                    await flood(doomed)
                assert victim.process.wait(timeout=30) == -signal.SIGKILL
                # Reconcile on host 0 while host 1 registers: nothing live is removed.
                async with raw_session(survivors[1].url, token) as busy:
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(flood_some, busy)
                        done = await anyio.to_thread.run_sync(
                            lambda: run_admin(
                                "reconcile",
                                "--state-dir",
                                str(tmp_path / "host0"),
                                *("--database-url", url, "--blob-store", blobs),
                            )
                        )
                    assert done.returncode == 0, done.stderr
                got = await keep.request("resources/read", {"uri": kept["artifact"]["uri"]})
                assert got["result"]["contents"][0]["_meta"]["sha256"] == kept["artifact"]["sha256"]
        # Every row has its bytes; every object without a row is an upload under a live lease.
        rows = _rows(url, "SELECT sha256, size FROM blobs")
        leased = {r[0] for r in _rows(url, "SELECT sha256 FROM blob_uploads")}
        objects = _objects(s3_server, blobs)
        for sha, size in rows:
            assert sha in objects, "a row without bytes"
            body = objects[sha]
            assert (hashlib.sha256(body).hexdigest(), len(body)) == (sha, size)
        cut_short = set(objects) - {r[0] for r in rows}
        assert cut_short and cut_short <= leased, "an object reconcile cannot explain"
    finally:
        for server in servers:
            server.stop()


async def flood_some(s: RawSession) -> None:
    for k in range(6):
        got = await s.call("test_produce", {"size": SIZE // 2, "seed": 900 + k})
        assert got["outcome"] in ("ok", "too_large"), got


def _objects(s3: Seaweed, blob_url: str) -> dict[str, bytes]:
    bucket = blob_url.removeprefix("s3://").split("/", 1)[0]
    client = s3.client()
    out: dict[str, bytes] = {}
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix="store/blobs/"
    ):
        for item in page.get("Contents", []):
            name = item["Key"].rsplit("/", 1)[-1]
            out[name] = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
    return out
