"""Exports by platform through a real server, on each engine: projects without presets."""

from __future__ import annotations

import base64

import anyio
import pytest

from tests.runtime.conftest import copy_demo, require_godot
from tests.runtime.test_captures import fetch, ok
from tests.support import engines
from tests.support.servers import stdio_client
from tests.support.trees import tree_digest

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]
NAME = "godot-mcp_demo"  # the demo's config/name, "godot-mcp demo", as a file name


async def export(client, args: dict, wait: float = 50) -> dict:
    started = await ok(client, "project.export", args)
    assert started["export"]["state"] == "running"
    r = await client.call_tool(
        "project_export_status", {"export_id": started["export"]["id"], "wait_seconds": wait}
    )
    assert r.structured_content["outcome"] == "ok", r.structured_content
    return r.structured_content["export"]


async def refused(client, args: dict) -> str:
    r = await client.call_tool("project_export", args)
    assert r.structured_content["outcome"] == "invalid_argument", r.structured_content
    return r.structured_content["message"]


def holds_the_project(pack: bytes) -> bool:
    return pack[:4] == b"GDPC" and b"main.tscn" in pack and b"spinner.gd" in pack


async def test_a_project_without_presets_exports_by_platform(tmp_path):
    require_godot()
    project = copy_demo(tmp_path / "demo")
    (project / "export_presets.cfg").unlink()
    before = tree_digest(project)
    data_home = tmp_path / "xdg-data"
    engines.current().install_templates(data_home)
    with anyio.fail_after(300):
        async with stdio_client(
            project, tmp_path / "state", env={"XDG_DATA_HOME": str(data_home)}
        ) as c:
            message = await refused(c, {"kind": "pack"})
            assert message == (
                "give exactly one of preset (a preset of the project) and platform "
                "(linux, windows, macos, web, android, ios: the engine's default options)"
            )
            message = await refused(c, {"preset": "Pack", "kind": "pack"})
            assert message == (
                "the project has no export_presets.cfg; known presets: none; export by "
                "platform instead (linux, windows, macos, web, android, ios) with the "
                "engine's default options"
            )
            for platform in ("linux", "web"):
                body = await export(c, {"platform": platform, "kind": "pack"})
                assert body["state"] == "succeeded", body
                assert (body["preset"], body["platform"], body["kind"]) == (None, platform, "pack")
                (out,) = body["outputs"]
                assert out["name"] == f"{NAME}.pck"
                assert holds_the_project(await fetch(c, out))

            body = await export(c, {"platform": "linux"})  # release, with the templates
            assert body["state"] == "succeeded", body
            assert (body["preset"], body["platform"], body["kind"]) == (None, "linux", "release")
            outputs = {o["name"]: o for o in body["outputs"]}
            assert sorted(outputs) == [f"{NAME}.pck", f"{NAME}.x86_64"]
            head = await c.read_resource(f"{outputs[f'{NAME}.x86_64']['uri']}?length=4")
            assert base64.b64decode(head.contents[0].blob) == b"\x7fELF"
            assert holds_the_project(await fetch(c, outputs[f"{NAME}.pck"]))

            # No Windows templates here: the export fails as any export without templates.
            body = await export(c, {"platform": "windows", "kind": "debug"})
            assert (body["state"], body["outputs"], body["platform"]) == ("failed", [], "windows")
            assert "template" in (body["error"] + body.get("log_tail", "")).lower()
            assert str(tmp_path) not in body["error"]
    assert tree_digest(project) == before
    assert not (project / "export_presets.cfg").exists()


async def test_a_platform_export_of_a_project_with_presets_uses_the_engines_defaults(tmp_path):
    require_godot()
    project = copy_demo(tmp_path / "demo")
    before = tree_digest(project)
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state") as c:
            message = await refused(c, {"preset": "Nope"})
            assert message.startswith("unknown export preset 'Nope'; known presets: ")
            assert message.endswith("; or export by platform instead of preset")
            message = await refused(c, {"preset": "Pack", "platform": "linux"})
            assert message.startswith("give exactly one of preset")
            body = await export(c, {"platform": "linux", "kind": "pack"})
            assert body["state"] == "succeeded", body
            # Not the preset's export_path name (build/demo.pck): the project's name.
            assert [o["name"] for o in body["outputs"]] == [f"{NAME}.pck"]
            assert (body["preset"], body["platform"]) == (None, "linux")
            preset = await export(c, {"preset": "Pack", "kind": "pack"})
            assert preset["state"] == "succeeded", preset
            assert preset["preset"] == "Pack" and "platform" not in preset
            assert [o["name"] for o in preset["outputs"]] == ["demo.pck"]
    assert tree_digest(project) == before
