"""A link out of the project on a real engine: a reload of a running game refuses only the
scripts named that are or load one, and takes the others; the default list leaves them out; an
import refuses in its own words."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.runtime.test_captures import ok
from tests.runtime.test_engine_fit import write
from tests.support import engines
from tests.support.servers import stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

PROJECT = (
    'config_version=4\n\n[application]\n\nconfig/name="links"\nrun/main_scene="res://main.tscn"\n'
)
MAIN_GD = """\
extends Node2D

const Tools = preload("res://tools.gd")

var kept = 0


func _process(_delta):
\tkept += 1
\tif kept % 10 == 0:
\t\tprint("VALUE %d" % Tools.value())
"""
TOOLS_GD = "extends Reference\n\n\nstatic func value():\n\treturn 1\n"
# The game runs uses.gd too, on a child node: it loads the link out (the game is not sandboxed).
MAIN_TSCN = """\
[gd_scene load_steps=3 format=2]

[ext_resource path="res://main.gd" type="Script" id=1]
[ext_resource path="res://uses.gd" type="Script" id=2]

[node name="Main" type="Node2D"]
script = ExtResource( 1 )

[node name="Uses" type="Node2D" parent="."]
script = ExtResource( 2 )
"""
LEVEL_TSCN = """\
[gd_scene load_steps=2 format=2]

[ext_resource path="res://linked.gd" type="Script" id=1]

[node name="Level" type="Node2D"]
script = ExtResource( 1 )
"""


async def test_a_reload_refuses_only_what_reaches_a_link_out(tmp_path: Path) -> None:
    engine = engines.current()
    project = write(
        tmp_path / "p",
        {
            "project.godot": engine.port(PROJECT),
            "main.tscn": engine.port(MAIN_TSCN),
            "main.gd": MAIN_GD,
            "tools.gd": engine.port(TOOLS_GD),
            "uses.gd": 'extends "res://mid.gd"\n',
            "mid.gd": 'extends Node2D\n\nconst Level = preload("res://level.tscn")\n',
            "level.tscn": engine.port(LEVEL_TSCN),
        },
    )
    (tmp_path / "outside.gd").write_text("extends Node2D\n")
    (project / "linked.gd").symlink_to(tmp_path / "outside.gd")
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state") as c:
            imported = (await c.call_tool("project_import", {})).structured_content
            started = await ok(c, "runtime.session.start", {"mode": "headless"})
            sid = {"session_id": started["session"]["id"]}
            await ok(c, "runtime.wait", {**sid, "until": {"log": "VALUE 1"}, "timeout_seconds": 20})
            everything = await ok(c, "runtime.scripts.reload", sid)
            (project / "tools.gd").write_text(engine.port(TOOLS_GD.replace("return 1", "return 2")))
            named = await ok(c, "runtime.scripts.reload", {**sid, "paths": ["res://tools.gd"]})
            await ok(c, "runtime.wait", {**sid, "until": {"log": "VALUE 2"}, "timeout_seconds": 20})
            args = {**sid, "paths": ["res://tools.gd", "res://uses.gd"]}
            refused = (await c.call_tool("runtime_scripts_reload", args)).structured_content
            await ok(c, "runtime.session.stop", sid)
    link = "res://linked.gd is a symbolic link to a place outside the project; "
    assert imported == {
        "outcome": "invalid_argument",
        "message": link + "imports read the project only",
    }
    # The scripts its nodes run, but the one that loads the link out (and its base, mid.gd).
    assert everything["reloaded"] == ["res://main.gd"]
    assert named["reloaded"] == ["res://tools.gd"]  # and the game ran its new code
    assert refused == {
        "outcome": "invalid_argument",
        "message": "res://uses.gd loads res://linked.gd, which leads out of the project through "
        "a symbolic link; reloads read the project only, and the game keeps its old code",
    }
