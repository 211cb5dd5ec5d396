"""project.import with a real engine: a never-imported project is refused a game at once,
imported (only the import's own files moved in, project.godot untouched), then runs; a check
of it imports its private copy first."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import anyio
import pytest
from PIL import Image

from godot_mcp.features.importer.copies import copy_imported
from tests.runtime.test_captures import fetch, ok
from tests.runtime.test_check import _check_processes, _until, tree_hash
from tests.support import engines
from tests.support.servers import http_client, serve_project, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

PROJECT = """\
config_version=4

[application]

config/name="never imported"
run/main_scene="res://main.tscn"
"""
SCENE = """\
[gd_scene load_steps=3 format=2]

[ext_resource path="res://main.gd" type="Script" id=1]
[ext_resource path="res://art/icon.png" type="Texture" id=2]

[node name="Main" type="Node2D"]
script = ExtResource( 1 )

[node name="Sprite" type="Sprite" parent="."]
texture = ExtResource( 2 )
"""
# Godot 4: a class only the global class cache (in .godot/) makes known to main.gd.
HELPER = "class_name Helper\nextends RefCounted\n\nstatic func twice(x):\n\treturn 2 * x\n"
MAIN = "extends Node2D\n\nfunc _ready():\n\tprint('answer ', {expr})\n"


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGBA", (16, 16), (200, 40, 40, 255)).save(out, format="PNG")
    return out.getvalue()


def never_imported(root: Path) -> Path:
    """The fixture: a scene with a sprite drawing a PNG; on Godot 4 a class_name script too."""
    engine = engines.current()
    root.mkdir(parents=True)
    (root / "project.godot").write_text(engine.port(PROJECT))
    (root / "main.tscn").write_text(engine.port(SCENE))
    (root / "art").mkdir()
    (root / "art" / "icon.png").write_bytes(png())
    if engine.major >= 4:
        (root / "helper.gd").write_text(HELPER)
        (root / "main.gd").write_text(MAIN.format(expr="Helper.twice(21)"))
    else:
        (root / "main.gd").write_text(MAIN.format(expr="2 * 21"))
    return root


def paths(root: Path) -> set[str]:
    out = set()
    for top, _, files in os.walk(root):
        for name in files:
            out.add((Path(top) / name).relative_to(root).as_posix())
    return out


def allowed(rel: str) -> bool:
    folder = ".godot/" if engines.current().major >= 4 else ".import/"
    return rel.startswith(folder) or rel.endswith((".import", ".uid"))


async def refused(client, tool: str, args: dict | None = None) -> str:
    r = await client.call_tool(tool.replace(".", "_"), args or {})
    assert r.structured_content["outcome"] == "unavailable", r.structured_content
    return r.structured_content["message"]


async def printed(client, sid: str, text: str, seconds: float = 15) -> bool:
    """Whether the game printed ``text`` (within ``seconds``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        log = await ok(client, "runtime.log.read", {"session_id": sid, "wait_seconds": 1})
        if any(text in line["text"] for line in log["lines"]):
            return True
    return False


async def test_a_never_imported_project_is_refused_a_game_then_imported_and_runs(tmp_path):
    project = never_imported(tmp_path / "project")
    four = engines.current().major >= 4
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    with anyio.fail_after(240):
        async with stdio_client(project, tmp_path / "state") as c:
            began = time.monotonic()
            why = await refused(c, "runtime.session.start", {"mode": "headless"})
            assert time.monotonic() - began < 5  # at once, no game started
            assert "never imported" in why and "project_import" in why
            assert "disabled" not in why
            before, config = paths(project), (project / "project.godot").read_bytes()
            generation = (await ok(c, "project.info"))["generation"]

            r = await c.call_tool("project_import", {}, progress_callback=progress)
            answer = r.structured_content
            assert answer["outcome"] == "ok", answer
            assert answer["imported"] == {"files": 1} and answer["seconds"] > 0
            new = paths(project) - before
            assert new and all(allowed(p) for p in new), sorted(new)
            assert "art/icon.png.import" in new
            if four:
                assert {".godot/global_script_class_cache.cfg", "helper.gd.uid"} <= new
                assert "main.gd.uid" in new
            else:
                assert any(p.startswith(".import/icon.png-") for p in new)
            assert before <= paths(project)
            assert (project / "project.godot").read_bytes() == config
            assert (await ok(c, "project.info"))["generation"] == generation
            values = [v for v, _, _ in seen]
            assert values == sorted(set(values))  # strictly increasing, whatever came
            if seen:
                assert seen[-1][2] == "the import ended: 1 files imported"

            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            await ok(c, "runtime.wait", {"session_id": sid, "until": {"node": "/root/Main/Sprite"}})
            tree = await ok(c, "runtime.scene.tree", {"session_id": sid})
            assert "/root/Main/Sprite" in str(tree)
            got = await ok(
                c,
                "runtime.node.get",
                {"session_id": sid, "path": "/root/Main/Sprite", "properties": ["texture"]},
            )
            texture = got["values"]["texture"]
            assert texture is not None and texture["path"] == "res://art/icon.png", texture
            assert await printed(c, sid, "answer 42")
            await ok(c, "runtime.session.stop", {"session_id": sid})

            # Importing again changes nothing of what is there.
            after = paths(project)
            again = await ok(c, "project.import")
            assert again["imported"]["files"] == 1
            assert paths(project) == after
            assert (project / "project.godot").read_bytes() == config


async def test_over_http_without_runtime_writes_the_import_is_disabled(tmp_path):
    project = never_imported(tmp_path / "project")
    before = tree_hash(project)
    served = serve_project(project, tmp_path / "state")
    try:
        with anyio.fail_after(60):
            async with http_client(served.http.url, served.http.tokens["alice"]) as c:
                profile = await ok(c, "server.profile")
                assert profile["availability"]["project_import"] == (
                    "unavailable: runtime writes are disabled on this server "
                    "(start it with --allow-runtime-writes)"
                )
                why = await refused(c, "project.import")
                assert "runtime writes are disabled on this server" in why
                why = await refused(c, "runtime.session.start", {"mode": "headless"})
                assert "never imported" in why and "project_import" in why
                assert "runtime writes are disabled on this server" in why
    finally:
        served.http.stop()
    assert tree_hash(project) == before


async def test_over_http_with_runtime_writes_the_import_runs(tmp_path):
    project = never_imported(tmp_path / "project")
    served = serve_project(project, tmp_path / "state", "--allow-runtime-writes")
    try:
        with anyio.fail_after(120):
            async with http_client(served.http.url, served.http.tokens["alice"]) as c:
                profile = await ok(c, "server.profile")
                assert profile["availability"]["project_import"] == "available"
                assert (await ok(c, "project.import"))["imported"] == {"files": 1}
                sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]
                await ok(c, "runtime.session.stop", {"session_id": sid["id"]})
    finally:
        served.http.stop()


async def test_a_second_import_while_one_runs_is_unavailable(tmp_path):
    project = never_imported(tmp_path / "project")
    state = tmp_path / "state"
    answers: list[dict] = []

    async def first(c) -> None:
        answers.append((await c.call_tool("project_import", {})).structured_content)

    with anyio.fail_after(180):
        async with stdio_client(project, state) as c, anyio.create_task_group() as tg:
            tg.start_soon(first, c)
            await _until(lambda: bool(_check_processes(state / "scratch" / "checks")), 60)
            why = await refused(c, "project.import")
            assert "an import of this project is running" in why
    assert answers and answers[0]["outcome"] == "ok", answers
    assert not list((state / "scratch" / "checks").glob("*/*"))  # its copy removed


async def test_a_check_of_a_never_imported_project_imports_its_copy_first(tmp_path):
    project = never_imported(tmp_path / "project")
    before = tree_hash(project)
    with anyio.fail_after(180):
        async with stdio_client(project, tmp_path / "state") as c:
            answer = await ok(c, "project.check")
    assert answer["errors"] == [], answer["errors"]
    assert answer["checked"]["scenes"] == 1
    assert any("its private copy was imported first" in w for w in answer["warnings"])
    assert tree_hash(project) == before  # the project itself is not imported


async def test_a_project_with_nothing_to_import_is_never_refused(tmp_path):
    engine = engines.current()
    project = tmp_path / "project"
    project.mkdir()
    (project / "project.godot").write_text(engine.port(PROJECT))
    (project / "main.gd").write_text(MAIN.format(expr="2 * 21"))
    (project / "main.tscn").write_text(engine.scene("main.gd"))
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state") as c:
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            await ok(c, "runtime.session.stop", {"session_id": sid})
            answer = await ok(c, "project.check")
            assert answer["errors"] == [] and "warnings" not in answer


async def test_an_export_of_a_never_imported_project_imports_its_copy_first(tmp_path):
    """An export runs on its own copy: imported there first (the project itself never), said
    in its answers; the pack holds the imported texture. A cancel meanwhile ends it."""
    project = never_imported(tmp_path / "project")
    before = paths(project)
    warning = copy_imported("exported")
    with anyio.fail_after(240):
        async with stdio_client(project, tmp_path / "state") as c:
            args = {"platform": "linux", "kind": "pack"}
            started = (await ok(c, "project.export", args))["export"]
            assert started["warnings"] == [warning]
            done = await ok(
                c, "project.export.status", {"export_id": started["id"], "wait_seconds": 50}
            )
            export = done["export"]
            while export["state"] == "running":
                export = (
                    await ok(
                        c,
                        "project.export.status",
                        {"export_id": started["id"], "wait_seconds": 50},
                    )
                )["export"]
            assert export["state"] == "succeeded", export
            assert export["warnings"] == [warning]
            (pack,) = export["outputs"]
            data = await fetch(c, pack)
            assert b".stex" in data or b".ctex" in data  # the texture as the engine imported it
            assert paths(project) == before  # the project itself was not imported

            again = (await ok(c, "project.export", args))["export"]
            cancelled = await ok(c, "project.export.cancel", {"export_id": again["id"]})
            assert cancelled["state"] == "cancelled", cancelled
            assert paths(project) == before
