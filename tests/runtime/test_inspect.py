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
from tests.runtime.test_answer_size import wire
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
	CONNECT_LAMBDA

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
    "CONNECT_LAMBDA": "pass",
}
HERO4 = {
    "EXPORT_INT": "@export",
    "SUPER_READY": "super._ready()",
    "CONNECT_TIMER": "$Timer.timeout.connect(_on_timer)",
    "CONNECT_DIED": 'died.connect(get_node("../Other").on_died)',
    "CONNECT_LAMBDA": "hit.connect(func(_damage, _source): pass)",
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


def scripts(engine: Engine) -> dict[str, str]:
    """The fixture's scripts by res:// path, as written for ``engine``."""
    godot3 = engine.major == 3
    hero = HERO
    for word, code in (HERO3 if godot3 else HERO4).items():
        hero = hero.replace(word, code)
    base = BASE.replace("EXPORT", "export" if godot3 else "@export")
    return {"res://base.gd": base, "res://hero.gd": hero, "res://other.gd": OTHER}


def coded(methods: list[dict[str, Any]], engine: Engine) -> list[dict[str, Any]]:
    """``methods`` each with the ``code`` of its func line, as the fixture's file has it."""
    texts = scripts(engine)
    return [{**m, "code": texts[m["path"]].split("\n")[m["line"] - 1].strip()} for m in methods]


def write_project(project: Path, engine: Engine) -> Path:
    project.mkdir(parents=True)
    godot3 = engine.major == 3
    (project / "project.godot").write_text(PROJECT3 if godot3 else PROJECT4)
    for path, text in scripts(engine).items():
        (project / path.removeprefix("res://")).write_text(text)
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


HERO_METHODS = [
    {"name": "_ready", "args": [], "path": "res://hero.gd", "line": 10},
    {"name": "_on_timer", "args": [], "path": "res://hero.gd", "line": 17},
    {"name": "helper", "args": [], "path": "res://hero.gd", "line": 20},
    {"name": "on_button", "args": ["a", "b", "c"], "path": "res://hero.gd", "line": 23},
    {"name": "_ready", "args": [], "path": "res://base.gd", "line": 8},
    {"name": "shared", "args": ["x", "y"], "path": "res://base.gd", "line": 11},
]
OTHER_NODE = "/root/Main/Other"
HERO_SIGNALS = [
    {"name": "hit", "connections": [{"node": OTHER_NODE, "method": "_on_hero_hit"}]},
    {"name": "died", "connections": [{"node": OTHER_NODE, "method": "on_died"}]},
    {"name": "base_signal", "connections": []},
    {"name": "visibility_changed", "connections": [{"node": OTHER_NODE, "method": "on_died"}]},
]
# A lambda connected in code (Godot 4): named by its script, as it belongs to no node.
LAMBDA = {"node": "res://hero.gd", "method": "<anonymous lambda>"}
HERO_SIGNALS4 = [
    {**HERO_SIGNALS[0], "connections": [*HERO_SIGNALS[0]["connections"], LAMBDA]},
    *HERO_SIGNALS[1:],
]
HERO_IN = [
    {"node": OTHER_NODE, "signal": "ping", "method": "on_button"},
    {"node": "/root/Main/Hero/Timer", "signal": "timeout", "method": "_on_timer"},
]
HERO_PROPERTIES = [
    {"name": "health", "type": "int", "exported": True, "value": 12},
    {"name": "plain", "type": "String", "exported": False, "value": "text"},
    {"name": "untyped", "type": "Variant", "exported": False, "value": None},
    {"name": "speed", "type": "float", "exported": True, "value": 3.5},
    {"name": "base_note", "type": "Variant", "exported": False, "value": "base"},
    {
        "name": "position",
        "type": "Vector2",
        "exported": True,
        "value": {"type": "Vector2", "x": 10.0, "y": 20.0},
    },
]


async def test_a_node_is_inspected_as_its_code_and_scene_made_it(connect: Connect, engine: Engine):
    """Over HTTP too, where runtime writes are off: inspecting only reads."""
    with anyio.fail_after(120):
        async with connect() as c:
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            at = {"session_id": sid}
            hero = await ok(c, "runtime.node.inspect", {**at, "path": "/root/Main/Hero"})
            assert hero == {
                "outcome": "ok",
                "class": "Node2D",
                "script": {
                    "path": "res://hero.gd",
                    "class_name": "InspectHero",
                    "extends": "res://base.gd",
                },
                "methods": coded(HERO_METHODS, engine),
                "signals": HERO_SIGNALS if engine.major == 3 else HERO_SIGNALS4,
                "connected_in": HERO_IN,
                "groups": ["from_base_code", "from_code", "from_scene"],
                "properties": HERO_PROPERTIES,
                "truncated": [],
            }
            # The script it extends, without a class_name of its own; the engine's class.
            other = await ok(c, "runtime.node.inspect", {**at, "path": OTHER_NODE})
            assert other["script"] == {"path": "res://other.gd", "extends": "Node"}
            assert other["methods"] == coded(
                [
                    {"name": "on_died", "args": [], "path": "res://other.gd", "line": 5},
                    {
                        "name": "_on_hero_hit",
                        "args": ["damage", "source"],
                        "path": "res://other.gd",
                        "line": 8,
                    },
                ],
                engine,
            )
            assert [m["code"] for m in other["methods"]] == [
                "func on_died():",
                "func _on_hero_hit(damage, source):",
            ]
            assert other["signals"] == [
                {
                    "name": "ping",
                    "connections": [{"node": "/root/Main/Hero", "method": "on_button"}],
                }
            ]
            assert other["connected_in"] == [
                {"node": "/root/Main/Hero", "signal": "hit", "method": "_on_hero_hit"},
                {"node": "/root/Main/Hero", "signal": "visibility_changed", "method": "on_died"},
                {"node": "/root/Main/Box/Button", "signal": "pressed", "method": "on_died"},
                {"node": "/root/Main/Hero", "signal": "died", "method": "on_died"},
            ]
            # A node without a script: its engine signals the project connected, in code.
            timer = await ok(c, "runtime.node.inspect", {**at, "path": "/root/Main/Hero/Timer"})
            assert timer == {
                "outcome": "ok",
                "class": "Timer",
                "script": None,
                "methods": [],
                "signals": [
                    {
                        "name": "timeout",
                        "connections": [{"node": "/root/Main/Hero", "method": "_on_timer"}],
                    }
                ],
                "connected_in": [],
                "groups": [],
                "properties": [
                    {"name": "wait_time", "type": "float", "exported": True, "value": 2.0}
                ],
                "truncated": [],
            }
            # What the engine wires for itself is not listed: a container's sorting of its
            # children, the scene root's ties to its viewport (Godot 4), the engine's groups.
            wiring = {**at, "include": ["signals", "groups"]}
            button = await ok(
                c, "runtime.node.inspect", {**wiring, "path": "/root/Main/Box/Button"}
            )
            assert button == {
                "outcome": "ok",
                "class": "Button",
                "signals": [
                    {"name": "pressed", "connections": [{"node": OTHER_NODE, "method": "on_died"}]}
                ],
                "connected_in": [],
                "groups": [],
                "truncated": [],
            }
            for path in ("/root/Main", "/root/Main/Box", "/root"):
                bare = await ok(c, "runtime.node.inspect", {**wiring, "path": path})
                assert (bare["signals"], bare["connected_in"], bare["groups"]) == ([], [], []), bare
            only = await ok(
                c, "runtime.node.inspect", {**at, "path": "/root/Main/Hero", "include": ["script"]}
            )
            assert only == {
                "outcome": "ok",
                "class": "Node2D",
                "script": hero["script"],
                "truncated": [],
            }

            # Every node of the tree, the root viewport and the engine's own children included.
            tree = await ok(c, "runtime.scene.tree", {**at, "depth": 8})
            for node in tree["nodes"]:
                whole = await ok(c, "runtime.node.inspect", {**at, "path": node["path"]})
                assert whole["class"] == node["class"] and whole["truncated"] == [], whole

            # Looking changed nothing the game says: no warning or error in its log.
            quiet = await ok(c, "runtime.log.read", {**at, "min_level": "warning"})
            assert quiet["lines"] == [], quiet["lines"]

            nowhere = await c.call_tool("runtime_node_inspect", {**at, "path": "/root/Main/Nope"})
            assert nowhere.structured_content == {
                "outcome": "not_found",
                "message": "no node at /root/Main/Nope",
            }
            unknown = await c.call_tool(
                "runtime_node_inspect", {"session_id": "A" * 22, "path": "/root/Main"}
            )
            assert unknown.structured_content == {
                "outcome": "not_found",
                "message": "no such game session",
            }
            odd = await c.call_tool(
                "runtime_node_inspect", {**at, "path": "/root/Main", "include": ["code"]}
            )
            assert odd.structured_content == {
                "outcome": "invalid_argument",
                "message": "include[0] must be one of script, methods, signals, groups, properties",
            }
            if connect.transport == "http":  # type: ignore[attr-defined]
                async with connect("bob") as other_caller:  # another caller's session
                    theirs = await other_caller.call_tool(
                        "runtime_node_inspect", {**at, "path": "/root/Main"}
                    )
                assert theirs.structured_content == unknown.structured_content
            await ok(c, "runtime.session.stop", at)


def big_script(engine: Engine) -> tuple[str, list[dict[str, Any]]]:
    """A script with 250 of everything inspect lists (more than the 200 a list keeps), a string
    longer than a small answer, and the methods it defines, each at its func line."""
    export = "export" if engine.major == 3 else "@export"
    lines = ["extends Node", "", 'var long_text = ""']
    lines += [f"{export} var v_{i:03d} = {i}" for i in range(250)]
    lines += [f"signal s_{i:03d}(a)" for i in range(250)]
    lines += ["", "func _ready():", "\tfor i in range(250):", '\t\tadd_to_group("g_%03d" % i)']
    lines += ["\tfor i in range(1200):", '\t\tlong_text += "0123456789"']
    methods = [
        {
            "name": "_ready",
            "args": [],
            "path": "res://big.gd",
            "line": lines.index("func _ready():") + 1,
            "code": "func _ready():",
        }
    ]
    for i in range(250):
        lines += ["", f"func f_{i:03d}(a, b):", "\tpass"]
        methods.append(
            {
                "name": f"f_{i:03d}",
                "args": ["a", "b"],
                "path": "res://big.gd",
                "line": len(lines) - 1,
                "code": f"func f_{i:03d}(a, b):",
            }
        )
    return "\n".join(lines) + "\n", methods


# 200 variables of 10,000 three-byte characters: 6 MB of values, more than the server reads as
# one bridge line (4 MiB). The bridge sends what fits its reply and sizes the rest.
WIDE = (
    "extends Node\n\n"
    + "".join(f'var w_{i:03d} = ""\n' for i in range(200))
    + """
func _ready():
	var piece = ""
	for i in range(1000):
		piece += "漢漢漢漢漢漢漢漢漢漢"
	for i in range(200):
		set("w_%03d" % i, piece)
"""
)
PIECE = "漢" * 10_000

SMALL = 9_000
DEFAULT = 512 * 1024
SHOWN_TEXT = {"type": "String", "truncated": True, "length": 12_000, "head": "0123456789" * 1000}


@pytest.mark.slow
@pytest.mark.parametrize("limit", [SMALL, DEFAULT])
async def test_an_inspection_fits_max_output_bytes_as_sent(
    tmp_path: Path, engine: Engine, limit: int
):
    project = write_project(tmp_path / "project", engine)
    source, methods = big_script(engine)
    (project / "big.gd").write_text(source)
    (project / "big.tscn").write_text(engine.scene("big.gd", "Node").replace("Root", "Big"))
    (project / "wide.gd").write_text(WIDE)
    (project / "wide.tscn").write_text(engine.scene("wide.gd", "Node").replace("Root", "Wide"))
    async with wire("stdio", project, tmp_path / "state", limit) as call:

        async def answer(args: dict[str, Any]) -> dict[str, Any]:
            return await answer_tool("runtime_node_inspect", args)

        async def answer_tool(tool: str, args: dict[str, Any]) -> dict[str, Any]:
            sent, message = await call(tool, args)
            body = message["result"]["structuredContent"]
            assert body["outcome"] == "ok", body
            assert sent <= limit, (sent, limit)  # the guarantee, as sent
            assert json.loads(message["result"]["content"][0]["text"]) == body
            return body

        with anyio.fail_after(120):
            start = {"scene": "res://big.tscn", "mode": "headless"}
            _, started = await call("runtime_session_start", start)
            sid = started["result"]["structuredContent"]["session"]["id"]
            at = {"session_id": sid, "path": "/root/Big"}
            got = await answer(at)
            expected = {
                "methods": methods[:200],
                "signals": [{"name": f"s_{i:03d}", "connections": []} for i in range(200)],
                "groups": [f"g_{i:03d}" for i in range(200)],
                "properties": [
                    {"name": "long_text", "type": "Variant", "exported": False, "value": SHOWN_TEXT}
                ]
                + [
                    {
                        "name": f"v_{i:03d}",
                        "type": "int",
                        "exported": True,
                        "value": i,
                    }
                    for i in range(199)
                ],
                "connected_in": [],
            }
            if limit == DEFAULT:  # each list at most 200, and says so
                assert got == {
                    "outcome": "ok",
                    "class": "Node",
                    "script": {"path": "res://big.gd", "extends": "Node"},
                    **expected,
                    "truncated": ["methods", "signals", "groups", "properties"],
                }
            else:  # what fits: each list a head of the whole, every cut one named
                assert got["truncated"] == ["methods", "signals", "groups", "properties"]
                for key, items in expected.items():
                    assert got[key] == items[: len(got[key])], key
                assert len(got["properties"]) < 200 and got["groups"], got
            # A value larger than the whole answer stands as a marker of its size.
            props = await answer({**at, "include": ["properties"]})
            first = props["properties"][0]
            if limit == SMALL:
                size = len(json.dumps(SHOWN_TEXT, separators=(",", ":")).encode())
                assert first["value"] == {"type": "truncated", "bytes": size}
                assert props["truncated"] == ["properties"]
            else:
                assert first["value"] == SHOWN_TEXT
            await call("runtime_session_stop", {"session_id": sid})

            # Values larger than a bridge line: what fits, the rest sized; the session serves on.
            _, started = await call("runtime_session_start", {**start, "scene": "res://wide.tscn"})
            sid = started["result"]["structuredContent"]["session"]["id"]
            wide = await answer({"session_id": sid, "path": "/root/Wide"})
            assert wide["truncated"] == ["properties"]
            marker = {
                "type": "truncated",
                "bytes": len(json.dumps(PIECE, ensure_ascii=False).encode()),
            }
            values = [p["value"] for p in wide["properties"]]
            assert values and all(v in (PIECE, marker) for v in values), values[:1]
            assert [p["name"] for p in wide["properties"]] == [
                f"w_{i:03d}" for i in range(len(values))
            ]
            if limit == DEFAULT:
                assert values[0] == PIECE
            tree = await answer_tool("runtime_scene_tree", {"session_id": sid, "depth": 1})
            assert tree["current_scene"] == "/root/Wide"
