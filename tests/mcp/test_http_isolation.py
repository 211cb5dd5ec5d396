"""Over HTTP an artifact is bound to the MCP session that asked for it."""

from __future__ import annotations

import anyio
import httpx2
import pytest
from mcp import MCPError

from godot_mcp.store.store import ArtifactStore
from tests.mcp.conftest import make_project
from tests.mcp.test_resources import produce
from tests.support.servers import http_client, make_tokens, start_http

pytestmark = pytest.mark.anyio


async def refusal(client, uri: str) -> tuple[int, str, dict]:
    with pytest.raises(MCPError) as exc:
        await client.read_resource(uri)
    e = exc.value
    return e.code, e.message, e.data


def same_but_uri(a: tuple[int, str, dict], b: tuple[int, str, dict]) -> None:
    assert a[:2] == b[:2] == (-32602, "Resource not found")
    assert {**a[2], "uri": "-"} == {**b[2], "uri": "-"} == {"uri": "-", "outcome": "not_found"}


async def test_other_sessions_and_principals_get_the_identical_not_found(mcp_env):
    url, tokens = mcp_env.http.url, mcp_env.http.tokens
    with anyio.fail_after(60):
        async with http_client(url, tokens["alice"]) as a:
            art = await produce(a, 4000, seed=21)
            unknown = await refusal(a, "godot-mcp://artifacts/AAAAAAAAAAAAAAAAAAAAAA")
            out_of_range = await refusal(a, art["uri"] + "?offset=4000")
            for who in ("alice", "alice2", "bob"):
                async with http_client(url, tokens[who]) as other:
                    same_but_uri(await refusal(other, art["uri"]), unknown)
                    same_but_uri(await refusal(other, art["uri"] + "?offset=1"), out_of_range)
                    assert (await other.list_resources()).resources == []
                    r = await other.call_tool("artifacts.read", {"uri": art["uri"]})
                    assert r.structured_content["outcome"] == "not_found"
            assert [x.uri for x in (await a.list_resources()).resources] == [art["uri"]]


async def test_a_session_id_presented_with_another_token_is_refused(mcp_env):
    url, tokens = mcp_env.http.url, mcp_env.http.tokens
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30) as raw:
            init = await raw.post(
                url,
                headers={
                    "Authorization": f"Bearer {tokens['alice']}",
                    "accept": "application/json, text/event-stream",
                    "content-type": "application/json",
                    "mcp-protocol-version": "2025-11-25",
                },
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                },
            )
            assert init.status_code == 200
            sid = init.headers["mcp-session-id"]
            for token in (tokens["alice2"], tokens["bob"]):
                r = await raw.post(
                    url,
                    headers={
                        "Authorization": f"Bearer {token}",
                        "mcp-session-id": sid,
                        "accept": "application/json, text/event-stream",
                        "content-type": "application/json",
                        "mcp-protocol-version": "2025-11-25",
                    },
                    json={"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
                )
                assert r.status_code == 404


async def test_missing_or_bad_tokens_get_401_and_foreign_hosts_are_refused(mcp_env):
    url = mcp_env.http.url
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(timeout=30) as raw:
            assert (await raw.post(url, json=body, headers=headers)).status_code == 401
            bad = {**headers, "Authorization": "Bearer gmcp_not-a-token"}
            assert (await raw.post(url, json=body, headers=bad)).status_code == 401
            good = {**headers, "Authorization": f"Bearer {mcp_env.http.tokens['alice']}"}
            evil = await raw.post(url, json=body, headers={**good, "Host": "evil.example"})
            assert evil.status_code == 421


async def test_sessionless_revisions_are_refused_with_32022_and_the_sdk_falls_back(mcp_env):
    url, token = mcp_env.http.url, mcp_env.http.tokens["alice"]
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(timeout=30) as raw:
            r = await raw.post(
                url,
                headers={
                    "Authorization": f"Bearer {token}",
                    "mcp-protocol-version": "2026-07-28",
                    "accept": "application/json, text/event-stream",
                    "content-type": "application/json",
                },
                json={"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}},
            )
            assert r.status_code == 400
            err = r.json()["error"]
            assert err["code"] == -32022 and err["data"]["requested"] == "2026-07-28"
            assert "2025-11-25" in err["data"]["supported"]
        async with http_client(url, token) as c:
            assert c.protocol_version == "2025-11-25"


async def test_an_ended_session_releases_its_artifacts(mcp_env):
    url, token = mcp_env.http.url, mcp_env.http.tokens["bob"]
    with anyio.fail_after(60):
        async with http_client(url, token) as c:
            art = await produce(c, 3000, seed=77)
        store = ArtifactStore(mcp_env.state_dir)
        try:
            with anyio.fail_after(10):
                while _rows(store, art):
                    await anyio.sleep(0.05)
        finally:
            store.close()


def _rows(store: ArtifactStore, art: dict) -> int:
    from sqlalchemy import func, select

    from godot_mcp.store.db import read_session
    from godot_mcp.store.models import Artifact

    aid = art["uri"].rsplit("/", 1)[1]
    with read_session(store.engine) as s:
        return int(
            s.scalar(select(func.count()).select_from(Artifact).where(Artifact.id == aid)) or 0
        )


@pytest.mark.slow  # starts servers
async def test_a_session_of_a_previous_launch_cannot_read_after_a_restart(tmp_path):
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    tokens = make_tokens(state, ["alice"])
    first = start_http(project, state, tokens=tokens)
    try:
        with anyio.fail_after(60):
            async with http_client(first.url, tokens["alice"], terminate_on_close=False) as c:
                art = await produce(c, 1234, seed=4)
    finally:
        first.process.kill()  # no goodbye: the store still holds the launch's rows
        first.process.wait(timeout=10)
    second = start_http(project, state, tokens=tokens)
    try:
        with anyio.fail_after(60):
            async with http_client(second.url, tokens["alice"]) as c:
                got = await refusal(c, art["uri"])
                assert got == (
                    -32602,
                    "Resource not found",
                    {"uri": art["uri"], "outcome": "not_found"},
                )
                assert (await c.list_resources()).resources == []
    finally:
        second.stop()
