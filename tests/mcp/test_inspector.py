"""An independent client: the MCP Inspector CLI over stdio."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import warnings

import pytest

from tests.mcp.conftest import make_project
from tests.support.producer import payload
from tests.support.servers import ROOT, serve_args, server_env

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


def _inspector(argv: list[str], *method: str) -> dict:
    done = subprocess.run(
        ["npx", "-y", INSPECTOR, "--cli", *argv, *method],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
        env=server_env(),
    )
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    return json.loads(done.stdout)


def test_the_inspector_cli_lists_the_template_and_reads_a_range_over_stdio(tmp_path) -> None:
    if shutil.which("npx") is None:
        warnings.warn(
            "LOUD SKIP: npx is not installed; the Inspector CLI test did not run", stacklevel=1
        )
        pytest.skip("LOUD SKIP: node/npm (npx) are not installed")
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    argv = serve_args(project, state)
    templates = _inspector(argv, "--method", "resources/templates/list")
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == [
        "godot-mcp://artifacts/{artifact_id}{?offset,length}"
    ]
    made = _inspector(
        argv,
        "--method",
        "tools/call",
        "--tool-name",
        "test.produce",
        "--tool-arg",
        "size=5000",
        "--tool-arg",
        "seed=8",
    )
    uri = made["structuredContent"]["artifact"]["uri"]
    read = _inspector(argv, "--method", "resources/read", "--uri", f"{uri}?offset=100&length=50")
    (content,) = read["contents"]
    assert base64.b64decode(content["blob"]) == payload(5000, 8)[100:150]
    assert content["_meta"]["offset"] == 100 and content["_meta"]["length"] == 50
