"""``godot-mcp serve`` set-up errors and ``godot-mcp-admin`` commands, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import httpx2
import pytest
from mcp import MCPError

from tests.mcp.conftest import make_project
from tests.mcp.test_resources import produce
from tests.support.servers import (
    ROOT,
    http_client,
    run_admin,
    server_env,
    start_http,
    stdio_client,
)

# slow: runs the commands as processes.
pytestmark = pytest.mark.slow


def run(*argv: str, module: str = "godot_mcp.cli.serve", env: dict | None = None):
    return subprocess.run(
        [sys.executable, "-m", module, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=server_env(env),
    )


admin = run_admin


def test_the_environment_supplies_options(tmp_path):
    project = make_project(tmp_path / "p")
    done = run(
        "serve",
        "--project",
        str(project),
        env={"GODOT_MCP_STATE_DIR": str(tmp_path / "s"), "GODOT_MCP_RETENTION_SECONDS": "abc"},
    )
    assert done.returncode == 2 and "GODOT_MCP_RETENTION_SECONDS" in done.stderr


def test_token_add_prints_the_token_alone_and_revoke_takes_effect_at_once(tmp_path):
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    added = admin("token", "add", "carol", "--state-dir", str(state))
    assert added.returncode == 0
    (token,) = added.stdout.splitlines()
    assert token.startswith("gmcp_") and len(token) > 40
    listed = admin("token", "list", "--json", "--state-dir", str(state))
    (entry,) = json.loads(listed.stdout)
    assert entry["principal"] == "carol" and token not in listed.stdout
    assert token not in (state / "store.db").read_bytes().decode("latin-1")
    server = start_http(project, state, tokens={"carol": token})
    try:

        async def flow() -> None:
            with anyio.fail_after(60):
                async with http_client(server.url, token) as c:
                    await produce(c, 10, seed=1)
                    assert (
                        admin("token", "revoke", "carol", "--state-dir", str(state)).returncode == 0
                    )
                    with pytest.raises(MCPError):
                        await c.list_resources()
                async with httpx2.AsyncClient(timeout=30) as raw:
                    r = await raw.post(
                        server.url,
                        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                        headers={"Authorization": f"Bearer {token}"},
                    )
                    assert r.status_code == 401

        anyio.run(flow)
    finally:
        server.stop()


def test_reconcile_json_on_a_real_state_dir_prints_counts_and_no_paths(tmp_path):
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"

    async def flow() -> None:
        with anyio.fail_after(60):
            async with stdio_client(project, state) as c:
                await produce(c, 70_000, seed=3)
                await produce(c, 1000, seed=4)

    anyio.run(flow)
    (state / "blobs" / ".tmp" / "stage-stale").write_bytes(b"x")
    done = admin("reconcile", "--json", "--state-dir", str(state))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["artifacts_kept"] == 2 and report["bytes_in_use"] == 71_000
    assert report["temp_files_removed"] == 1 and report["blobs_verified"] == 2
    status = admin("status", "--state-dir", str(state))
    for out in (done.stdout, status.stdout, status.stderr, done.stderr):
        assert str(tmp_path) not in out and "blobs/" not in out


def test_expired_artifacts_stop_resolving_over_stdio(tmp_path):
    project = make_project(tmp_path / "p")

    async def flow() -> None:
        with anyio.fail_after(60):
            async with stdio_client(project, tmp_path / "s", "--retention-seconds", "1") as c:
                art = await produce(c, 10, seed=1)
                while True:
                    try:
                        await c.read_resource(art["uri"])
                    except Exception as exc:
                        assert exc.data["outcome"] == "not_found"  # type: ignore[attr-defined]
                        break
                    await anyio.sleep(0.1)
                assert (await c.list_resources()).resources == []

    anyio.run(flow)


def test_the_shipped_server_offers_no_test_tool(tmp_path):
    project = make_project(tmp_path / "p")

    async def flow() -> list[str]:
        with anyio.fail_after(60):
            async with stdio_client(project, tmp_path / "s", test_tools=False) as c:
                return [t.name for t in (await c.list_tools()).tools]

    names = anyio.run(flow)
    assert "server_profile" in names and not any(n.startswith("test") for n in names)
