"""runtime.node.inspect on a real game, over both transports: a node's script and the scripts it
extends, their methods at their func lines, its signals with the connections the project made
(in a scene and in code, never the engine's own), the signals connected into it, its groups and
its properties, exactly as a fixture project of known lines and wiring has them; and its answer
measured as sent at a small and at the default max_output_bytes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.mcp.conftest import Connect, transport_factory
from tests.runtime.test_captures import ok
from tests.support.engines import Engine
from tests.support.servers import ServedProject, serve_project

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

PROJECT3 = """config_version=4

_global_script_classes=[ {
"base": "Node2D",
"class": "InspectBase",
"language": "GDScript",
"path": "res://base.gd"
}, {
"base": "Node2D",
"class": "InspectHero",
"language": "GDScript",
"path": "res://hero.gd"
} ]

[application]

config/name="inspect"
run/main_scene="res://main.tscn"
"""
PROJECT4 = """config_version=5

[application]

config/name="inspect"
run/main_scene="res://main.tscn"
"""

# Lines are the same on both engines: the tests name them.
BASE = """extends Node2D
class_name InspectBase

signal base_signal(amount)
EXPORT var speed := 3.5
var base_note = "base"

func _ready():
	add_to_group("from_base_code")

func shared(x, y = 2):
	return x + y
"""
HERO = """extends "res://base.gd"
class_name InspectHero

signal hit(damage, source)
signal died
EXPORT_INT var health = 10
var plain := "text"
var untyped

func _ready():
	SUPER_READY
	add_to_group("from_code")
	CONNECT_TIMER
	CONNECT_DIED

func _on_timer():
	pass

static func helper():
	pass

func on_button(a, b = 2,
		c: String = "x"):
	pass
"""
HERO3 = {
    "EXPORT_INT": "export(int)",
    "SUPER_READY": "._ready()",
    "CONNECT_TIMER": '$Timer.connect("timeout", self, "_on_timer")',
    "CONNECT_DIED": 'connect("died", get_node("../Other"), "on_died")',
}
HERO4 = {
    "EXPORT_INT": "@export",
    "SUPER_READY": "super._ready()",
    "CONNECT_TIMER": "$Timer.timeout.connect(_on_timer)",
    "CONNECT_DIED": 'died.connect(get_node("../Other").on_died)',
}
OTHER = """extends Node

signal ping(a, b)

func on_died():
	pass

func _on_hero_hit(damage, source):
	pass
"""
MAIN = """[gd_scene load_steps=3 format=2]

[ext_resource path="res://hero.gd" type="Script" id=1]
[ext_resource path="res://other.gd" type="Script" id=2]

[node name="Main" type="Node2D"]

[node name="Hero" type="Node2D" parent="." groups=["from_scene"]]
position = Vector2( 10, 20 )
script = ExtResource( 1 )
health = 12

[node name="Timer" type="Timer" parent="Hero"]
wait_time = 2.0

[node name="Other" type="Node" parent="."]
script = ExtResource( 2 )

[node name="Box" type="VBoxContainer" parent="."]

[node name="Button" type="Button" parent="Box"]

[connection signal="hit" from="Hero" to="Other" method="_on_hero_hit"]
[connection signal="visibility_changed" from="Hero" to="Other" method="on_died"]
[connection signal="ping" from="Other" to="Hero" method="on_button"]
[connection signal="pressed" from="Box/Button" to="Other" method="on_died"]
"""


def write_project(project: Path, engine: Engine) -> Path:
    project.mkdir(parents=True)
    godot3 = engine.major == 3
    (project / "project.godot").write_text(PROJECT3 if godot3 else PROJECT4)
    (project / "base.gd").write_text(BASE.replace("EXPORT", "export" if godot3 else "@export"))
    hero = HERO
    for word, code in (HERO3 if godot3 else HERO4).items():
        hero = hero.replace(word, code)
    (project / "hero.gd").write_text(hero)
    (project / "other.gd").write_text(OTHER)
    (project / "main.tscn").write_text(engine.port(MAIN))
    if not godot3:  # scripts extend by path: the game needs no class cache, nothing to import
        (project / ".godot").mkdir()
    return project


@pytest.fixture(scope="module")
def inspect_env(
    tmp_path_factory: pytest.TempPathFactory, engine: Engine
) -> Iterator[ServedProject]:
    base = tmp_path_factory.mktemp(f"inspect-{engine.name}")
    served = serve_project(write_project(base / "project", engine), base / "state")
    yield served
    served.http.stop()


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, inspect_env: ServedProject) -> Connect:
    return transport_factory(request.param, inspect_env)


async def test_a_node_is_inspected_as_its_code_and_scene_made_it(connect: Connect, engine: Engine):
    with anyio.fail_after(120):
        async with connect() as c:
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            at = {"session_id": sid}
            for path in (
                "/root/Main/Hero",
                "/root/Main/Hero/Timer",
                "/root/Main/Box/Button",
                "/root/Main",
                "/root/Main/Other",
            ):
                got = await ok(c, "runtime.node.inspect", {**at, "path": path})
                print(json.dumps(got))
            await ok(c, "runtime.session.stop", at)
