"""An independent client: the TypeScript MCP SDK (npm) against real servers.

``tests/js/client.mjs`` connects ``@modelcontextprotocol/sdk`` (pinned in ``tests/js/package.json``,
installed by ``tools/setup.sh``) to a real ``godot-mcp serve`` over stdio or Streamable HTTP, runs
its checks and prints its findings as one JSON object; these tests run it and judge the findings.
The SDK validates every answer with zod and every ``structuredContent`` (refusals included)
against the tool's ``outputSchema``: an answer that does not validate fails the run.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from godot_mcp.app import shipped_tools
from tests.runtime.conftest import copy_demo, require_godot
from tests.support.producer import payload
from tests.support.projects import make_project
from tests.support.servers import ROOT, make_tokens, serve_args, server_env, start_http

# slow: runs the TypeScript SDK under Node.
pytestmark = pytest.mark.slow

JS = ROOT / "tests" / "js"
CLIENT = JS / "client.mjs"
SDK = JS / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
TOOLS = {t.name.replace(".", "_") for t in shipped_tools()} | {"test_produce"}
BIG_SHA256 = hashlib.sha256(payload(1500000, 3)).hexdigest()
CLIENT_TIMEOUT_S = 180


def require_ts_sdk() -> str:
    """The node binary; skip loudly when node or the npm-installed SDK is absent."""
    node = shutil.which("node")
    reason = None
    if node is None:
        reason = "SKIPPED LOUDLY: node is not installed; the TypeScript SDK client test did not run"
    elif not SDK.is_file():
        reason = (
            f"SKIPPED LOUDLY: {SDK.parent.relative_to(ROOT)} is missing (tools/setup.sh could "
            "not install the npm clients, see tests/js/npm.log); the TypeScript SDK client "
            "test did not run"
        )
    if reason:
        warnings.warn(reason, stacklevel=2)
        pytest.skip(reason)
    assert node is not None
    return node


def pinned(package: str) -> str:
    return json.loads((JS / "package.json").read_text())["dependencies"][package]


@contextmanager
def served(
    transport: str, project: Path, state: Path, env: dict[str, str] | None = None
) -> Iterator[list[str]]:
    """The client.mjs arguments that reach a real server of ``project`` over ``transport``."""
    if transport == "stdio":
        yield ["--stdio", *serve_args(project, state)]
        return
    tokens = make_tokens(state, ["alice"])
    server = start_http(project, state, tokens=tokens, env=env)
    try:
        yield ["--http", server.url, "--token", tokens["alice"]]
    finally:
        server.stop()


def run_client(node: str, argv: list[str], env: dict[str, str] | None = None) -> dict:
    done = subprocess.run(
        [node, str(CLIENT), *argv],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        cwd=ROOT,
        env=server_env(env),
    )
    lines = done.stdout.strip().splitlines()
    try:
        findings = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        findings = {}
    assert done.returncode == 0 and findings.get("ok") is True, (
        f"client.mjs exited {done.returncode}: {findings.get('error')}\n"
        f"findings: {done.stdout[-6000:]}\nstderr: {done.stderr[-4000:]}"
    )
    return findings


def check_basics(f: dict, transport: str) -> None:
    assert f["transport"] == transport
    assert f["sdk_version"] == pinned("@modelcontextprotocol/sdk")
    assert f["server"]["name"] == "godot-mcp"

    tools = f["tools"]
    assert set(tools["names"]) == TOOLS and tools["count"] == len(TOOLS)
    assert all(NAME.match(n) for n in tools["names"])
    assert tools["one_of"] == len(TOOLS)  # every outputSchema is a oneOf of ok and refusal
    assert {"server_profile", "project_info", "runtime_session_list"} <= set(tools["read_only"])
    assert f["profile"]["transport"] == transport
    assert f["profile"]["limits"]["max_output_bytes"] == 524288

    big = f["big"]
    assert big["size"] == 1500000 and big["reads"] == 4  # ranges of 400000
    assert big["sha256"] == big["answered_sha256"] == BIG_SHA256

    listing = f["listing"]  # a fresh state dir / a fresh HTTP session: 1 big + 60 small
    assert listing == {"produced": 60, "pages": 2, "listed": 61, "found": 60}

    refused = f["refused"]
    assert refused["code"] == -32602
    if transport == "stdio":
        assert refused["data"]["outcome"] == "out_of_range"
        assert refused["data"]["size"] == 1500000
        assert refused["data"]["max_output_bytes"] == 524288
        assert "Range not admitted" in refused["message"]
    else:
        assert refused["data"] == {"uri": refused["uri"], "outcome": "not_found"}
        assert refused["message"].endswith("Resource not found")

    assert len(f["invalid"]) == 3
    assert all(i["isError"] and i["outcome"] == "invalid_argument" for i in f["invalid"])


def check_godot(g: dict, project: Path) -> None:
    assert g["session"]["mode"] == "windowed"
    shot, rec = g["screenshot"], g["recording"]
    assert shot["png"] and shot["width"] > 0 and shot["height"] > 0 and shot["size"] > 0
    assert rec["png"] and rec["actl"] and rec["frames"] == 4 and rec["size"] > 0

    export = g["export"]
    assert export["state"] == "succeeded"
    progress = export["progress"]
    assert progress, "project_export_status sent no progress while it waited"
    values = [p["progress"] for p in progress]
    assert all(a < b for a, b in itertools.pairwise(values)), progress
    assert all(p["total"] is None or p["total"] != p["progress"] for p in progress[:-1]), progress
    assert progress[-1]["total"] == progress[-1]["progress"], progress
    assert export["last_total_is_progress"]

    pack = g["pack"]
    assert pack["name"] == "demo.pck" and pack["size"] > 0 and len(pack["sha256"]) == 64
    assert not (project / "build").exists()  # the export never writes into the project
    assert g["stopped"] == "stopped"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_typescript_sdk_lists_reads_pages_and_validates(tmp_path, transport) -> None:
    node = require_ts_sdk()
    project = make_project(tmp_path / "project")
    with served(transport, project, tmp_path / "state") as argv:
        findings = run_client(node, argv)
    check_basics(findings, transport)
    assert "godot" not in findings


@pytest.mark.godot
@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_typescript_sdk_drives_a_game_and_an_export(tmp_path, transport) -> None:
    node = require_ts_sdk()
    require_godot("godot3", "godot3-server", "Xvfb")
    project = copy_demo(tmp_path / "demo")
    env = {"DISPLAY": ""}  # the server starts its own Xvfb
    with served(transport, project, tmp_path / "state", env=env) as argv:
        findings = run_client(node, ["--godot", *argv], env=env)
    check_basics(findings, transport)
    check_godot(findings["godot"], project)
