"""``--toolsets``: only the chosen features' tools are listed and callable, beside the core
ones; through the SDK client over both transports, and the CLI's refusal of unknown names."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError

from godot_mcp.app import open_app, shipped_tools
from godot_mcp.config import Settings
from godot_mcp.mcp.spec import TOOLSETS
from godot_mcp.store.values import Limits
from tests.mcp.conftest import transport_factory
from tests.support import fake_godot
from tests.support.projects import make_project
from tests.support.servers import (
    ROOT,
    ServedProject,
    run_admin,
    serve_project,
    server_env,
    stdio_client,
)

pytestmark = pytest.mark.anyio

CORE = {
    "server.profile",
    "project.info",
    "project.reload",
    "project.source",
    "artifacts.read",
    "runtime.session.start",
    "runtime.session.list",
    "runtime.session.stop",
}
MEMBERS = {
    "game": {
        "runtime.screenshot.capture",
        "runtime.recording.capture",
        "runtime.log.read",
        "runtime.log.capture",
        "runtime.input.send",
        "runtime.scene.tree",
        "runtime.time.control",
        "runtime.node.get",
        "runtime.node.set",
        "runtime.node.call",
        "runtime.wait",
        "runtime.perf.read",
        "runtime.node.inspect",
    },
    "debug": {
        "runtime.debug.breakpoints",
        "runtime.debug.state",
        "runtime.debug.variables",
        "runtime.debug.evaluate",
        "runtime.debug.control",
        "runtime.profile.capture",
        "runtime.scripts.reload",
    },
    "check": {"project.check"},
    "import": {"project.import"},
    "test": {"project.test"},
    "export": {"project.export", "project.export.status", "project.export.cancel"},
    "api": {"project.api"},
}
KNOWN = "known: all, game, debug, check, import, test, export, api"


def wire(names: set[str]) -> set[str]:
    return {n.replace(".", "_") for n in names}


def test_each_tool_declares_the_toolset_it_belongs_to():
    declared: dict[str, set[str]] = {}
    for tool in shipped_tools():
        declared.setdefault(tool.toolset, set()).add(tool.name)
    assert declared == {"core": CORE, **MEMBERS}
    assert set(TOOLSETS) == set(MEMBERS)


async def test_a_server_in_process_offers_only_its_toolsets(tmp_path, monkeypatch):
    monkeypatch.setenv("DISPLAY", ":fake")  # the fake engine draws nowhere
    fake = fake_godot.script(tmp_path / "engine")
    settings = Settings(
        state_dir=tmp_path / "state",
        godot=str(fake),
        godot_headless=str(fake),
        limits=Limits(),
        toolsets=frozenset({"api"}),
    )
    project = make_project(tmp_path / "project")
    async with open_app(settings, project, "stdio") as app, Client(app.server) as client:
        assert await listed(client) == wire(CORE | MEMBERS["api"])
        profile = (await client.call_tool("server_profile", {})).structured_content
        assert profile["toolsets"] == {name: name == "api" for name in TOOLSETS}
        assert set(profile["availability"]) == wire(CORE | MEMBERS["api"])
        assert await refused(client, "project_check") == await refused(
            client, "no_such_tool", "project_check"
        )


def run_serve(tmp_path: Path, *argv: str, env: dict[str, str] | None = None):
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    serve = [sys.executable, "-m", "godot_mcp.cli.serve", "serve", "--project", str(project)]
    done = subprocess.run(
        [*serve, "--state-dir", str(state), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=server_env(env),
    )
    assert not state.exists()  # refused before anything was made
    return done


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "env", "said"),
    [
        (["--toolsets", "game,gmae"], None, "--toolsets: unknown toolset 'gmae'"),
        (["--toolsets", "game,"], None, "--toolsets: unknown toolset ''"),
        (["--toolsets", "core"], None, "--toolsets: unknown toolset 'core'"),
        (["--toolsets", ""], None, None),
        ([], {"GODOT_MCP_TOOLSETS": "Debug"}, "GODOT_MCP_TOOLSETS: unknown toolset 'Debug'"),
    ],
)
def test_an_unknown_toolset_exits_2_naming_the_known_ones(tmp_path, argv, env, said):
    done = run_serve(tmp_path, *argv, env=env)
    assert done.returncode == 2 and done.stdout == ""
    expected = f"{said} ({KNOWN})" if said else "--toolsets must not be empty"
    assert done.stderr == f"godot-mcp: error: {expected}\n"


@pytest.mark.slow
def test_the_admin_commands_refuse_an_unknown_toolset_too(tmp_path):
    done = run_admin("status", "--toolsets", "nope", "--state-dir", str(tmp_path / "state"))
    assert done.returncode == 2
    assert done.stderr == f"godot-mcp-admin: error: --toolsets: unknown toolset 'nope' ({KNOWN})\n"


@pytest.fixture(scope="module")
def debug_and_export(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedProject]:
    base = tmp_path_factory.mktemp("toolsets")
    served = serve_project(
        make_project(base / "project"), base / "state", "--toolsets", " debug , export"
    )
    yield served
    served.http.stop()


async def listed(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_only_the_chosen_toolsets_are_listed_and_callable(debug_and_export, transport):
    on = CORE | MEMBERS["debug"] | MEMBERS["export"]
    connect = transport_factory(transport, debug_and_export)
    with anyio.fail_after(60):
        async with connect() as client:
            assert await listed(client) == wire(on) | {"test_produce"}
            profile = (await client.call_tool("server_profile", {})).structured_content
            assert profile["toolsets"] == {
                "game": False,
                "debug": True,
                "check": False,
                "import": False,
                "test": False,
                "export": True,
                "api": False,
            }
            assert set(profile["availability"]) == wire(on) | {"test_produce"}
            status = await client.call_tool("project_export_status", {"export_id": "x" * 32})
            assert status.structured_content["outcome"] == "not_found"
            for off in ("runtime_screenshot_capture", "project.check", "project_api"):
                assert await refused(client, off) == await refused(client, "no_such_tool", off)


async def refused(client: Client, name: str, as_if: str | None = None) -> str:
    """How a call of ``name`` is answered, with ``name`` spelled as ``as_if``."""
    try:
        result = await client.call_tool(name, {})
    except MCPError as exc:
        said = f"error {exc.error.code}: {exc.error.message} {exc.error.data}"
    else:
        said = f"answer {result.is_error}: {result.structured_content}"
    return said.replace(name, as_if or name)


@pytest.mark.slow
async def test_all_is_the_default_and_names_every_toolset(tmp_path):
    async with stdio_client(make_project(tmp_path / "p"), tmp_path / "s", test_tools=False) as c:
        assert await listed(c) == wire(CORE.union(*MEMBERS.values()))
        profile = (await c.call_tool("server_profile", {})).structured_content
        assert profile["toolsets"] == dict.fromkeys(TOOLSETS, True)


@pytest.mark.slow
@pytest.mark.parametrize("toolset", TOOLSETS)
async def test_each_toolset_alone_over_stdio(tmp_path, toolset):
    project, state = make_project(tmp_path / "p"), tmp_path / "s"
    async with stdio_client(project, state, "--toolsets", toolset, test_tools=False) as c:
        assert await listed(c) == wire(CORE | MEMBERS[toolset])


@pytest.mark.slow
async def test_the_environment_chooses_the_toolsets_and_the_command_line_wins(tmp_path):
    project, state = make_project(tmp_path / "p"), tmp_path / "s"
    env = {"GODOT_MCP_TOOLSETS": "api,check"}
    async with stdio_client(project, state, env=env, test_tools=False) as c:
        assert await listed(c) == wire(CORE | MEMBERS["api"] | MEMBERS["check"])
    async with stdio_client(project, state, "--toolsets", "test", env=env, test_tools=False) as c:
        assert await listed(c) == wire(CORE | MEMBERS["test"])
    async with stdio_client(project, state, env={"GODOT_MCP_TOOLSETS": "all"}) as c:
        assert await listed(c) == wire(CORE.union(*MEMBERS.values())) | {"test_produce"}
