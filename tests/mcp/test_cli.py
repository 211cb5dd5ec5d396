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


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["serve", "--project", "{missing}"], "project directory does not exist"),
        (
            ["serve", "--project", "{project}", "--state-dir", "{project}/state"],
            "state dir must not be inside the project",
        ),
        (["serve", "--project", "{project}", "--transport", "http"], "HTTP needs a token"),
        (["serve", "--project", "{project}", "--max-output-bytes", "0"], "--max-output-bytes"),
        (
            ["serve", "--project", "{project}", "--max-output-bytes", "1023"],
            "--max-output-bytes must be at least 1024",
        ),
        (["serve", "--project", "{project}", "--transport", "http", "--port", "99999"], "--port"),
        (["serve", "--project", "{project}", "--transport", "carrier-pigeon"], "invalid choice"),
        (["serve"], "--project"),
        (["serve", "--project", "{project}", "--max-exports", "\u00b2"], "--max-exports"),
        (
            ["serve", "--project", "{project}", "--retention-seconds", "1" + "0" * 400],
            "--retention",
        ),
        (["serve", "--project", "{project}", "--tool-names", "shouty"], "--tool-names"),
        (["serve", "--project", "{project}", "--transport", "http", "--port", "\u0660"], "--port"),
    ],
)
def test_bad_setups_fail_with_one_line_and_status_2_creating_nothing(tmp_path, args, needle):
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    argv = [a.format(missing=tmp_path / "nope", project=project) for a in args]
    if "--state-dir" not in argv:
        argv += ["--state-dir", str(state)]
    done = run(*argv)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], done.stderr
    assert done.stdout == ""
    assert not state.exists() and not (project / "state").exists()


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


def test_reconcile_and_status_on_a_missing_state_dir_print_an_empty_report(tmp_path):
    for cmd in ("reconcile", "status"):
        done = admin(cmd, "--json", "--state-dir", str(tmp_path / "none"))
        assert done.returncode == 0
        report = json.loads(done.stdout)
        assert report["bytes_in_use"] == 0
    assert not (tmp_path / "none").exists()


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


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--state-dir", "{file}"], "not a directory"),
        (["--state-dir", "{file}/sub"], "not a directory"),
        (["--state-dir", ""], "--state-dir must not be empty"),
        (["--godot", "/no/such/godot"], "--godot"),
        (["--transport", "http", "--host", "256.1.1.1"], "does not resolve"),
        (["--transport", "http", "--port", "{busy}"], "cannot listen"),
    ],
)
def test_unusable_state_dirs_binaries_and_addresses_fail_with_one_line(tmp_path, extra, needle):
    import socket

    project = make_project(tmp_path / "p")
    afile = tmp_path / "afile"
    afile.write_text("x")
    state = tmp_path / "state"
    run_admin("token", "add", "x", "--state-dir", str(state))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        argv = [a.format(file=afile, busy=port) for a in extra]
        if "--state-dir" not in argv:
            argv += ["--state-dir", str(state)]
        done = run("serve", "--project", str(project), *argv)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], done.stderr
